"""The CPU quota that caps the default pool (runtime/aotk_cpus.c), read from made-up
/proc and /sys trees: cgroup v1 and v2, nested groups, containers' views, bad files."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from pathlib import Path

import pytest

from aotk.codegen import native_runtime

pytestmark = pytest.mark.aot

CpuQuota = Callable[[bytes], int]
V2_MOUNT = "29 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate"


def _v1_mount(top: str = "/", point: str = "/sys/fs/cgroup/cpu,cpuacct") -> str:
    return f"32 25 0:28 {top} {point} rw,relatime shared:12 - cgroup cgroup rw,cpu,cpuacct"


@pytest.fixture(scope="module")
def cpu_quota() -> CpuQuota:
    cc = native_runtime.compiler()
    if cc is None:
        pytest.skip("no C compiler")
    function = ctypes.CDLL(str(native_runtime.build(cc))).aotk_cpu_quota
    function.argtypes = [ctypes.c_char_p]
    function.restype = ctypes.c_int
    return function


def _tree(root: Path, mounts: list[str], groups: list[str], files: dict[str, str]) -> bytes:
    """A made-up system under `root`: its mountinfo, its cgroup list and cgroup files."""
    (root / "proc/self").mkdir(parents=True)
    (root / "proc/self/mountinfo").write_text("".join(f"{m}\n" for m in mounts))
    (root / "proc/self/cgroup").write_text("".join(f"{g}\n" for g in groups))
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return str(root).encode()


@pytest.mark.parametrize(
    ("cpu_max", "expected"),
    [
        *[("150000 100000\n", 2), ("100000 100000\n", 1), ("20000 100000\n", 1)],
        *[("max 100000\n", 0), ("", 0), ("abc\n", 0), ("100000 0\n", 0), ("-5 100000\n", 0)],
        ("100000000 100000\n", 256),  # capped at the pool's most threads
    ],
)
def test_a_container_of_cgroup_v2(
    cpu_quota: CpuQuota, tmp_path: Path, cpu_max: str, expected: int
) -> None:
    """docker --cpus on cgroup v2: the container sees its own group at the mount point."""
    files = {"sys/fs/cgroup/cpu.max": cpu_max}
    assert cpu_quota(_tree(tmp_path, [V2_MOUNT], ["0::/"], files)) == expected


@pytest.mark.parametrize(
    ("limits", "expected"),
    [
        ({"a": "200000 100000", "a/b": "max 100000"}, 2),  # the parent's limit holds
        ({"a": "400000 100000", "a/b": "50000 100000"}, 1),  # the tighter one below
        ({"": "100000 100000", "a/b": "300000 100000"}, 1),  # the mount's top counts
        ({"a/b/c": "100000 100000"}, 0),  # a group below the process's does not
    ],
)
def test_nested_groups_of_cgroup_v2(
    cpu_quota: CpuQuota, tmp_path: Path, limits: dict[str, str], expected: int
) -> None:
    files = {f"sys/fs/cgroup/{g}/cpu.max".replace("//", "/"): q for g, q in limits.items()}
    files["sys/fs/cgroup/a/b/cgroup.procs"] = ""
    assert cpu_quota(_tree(tmp_path, [V2_MOUNT], ["0::/a/b"], files)) == expected


@pytest.mark.parametrize(("quota", "expected"), [("300000", 3), ("250000", 3), ("-1", 0)])
def test_cgroup_v1_with_the_cpu_controller(
    cpu_quota: CpuQuota, tmp_path: Path, quota: str, expected: int
) -> None:
    """A v1 hierarchy: the quota over its period, in the group of the cpu controller."""
    group = "sys/fs/cgroup/cpu,cpuacct/docker/x"
    files = {f"{group}/cpu.cfs_quota_us": quota, f"{group}/cpu.cfs_period_us": "100000"}
    cpuset = "34 25 0:30 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset"
    files["sys/fs/cgroup/cpuset/other/cpu.cfs_quota_us"] = "100000"
    groups = ["5:cpuset:/other", "4:cpu,cpuacct:/docker/x", "0::/"]
    assert cpu_quota(_tree(tmp_path, [cpuset, _v1_mount()], groups, files)) == expected


@pytest.mark.parametrize(
    ("group", "expected"),
    [("/docker/x", 3), ("/docker/x/inner", 2), ("/elsewhere", 3)],
)
def test_a_v1_mount_showing_a_group_at_its_top(
    cpu_quota: CpuQuota, tmp_path: Path, group: str, expected: int
) -> None:
    """Docker on v1 without a cgroup namespace: the mount point is the group /docker/x;
    a process group outside it (another namespace's view) reads the mount point alone."""
    top = "sys/fs/cgroup/cpu,cpuacct"
    files = {f"{top}/cpu.cfs_quota_us": "300000", f"{top}/cpu.cfs_period_us": "100000"}
    for inner in ("inner", "elsewhere"):  # /docker/x/inner, /docker/x/elsewhere
        files[f"{top}/{inner}/cpu.cfs_quota_us"] = "150000"
        files[f"{top}/{inner}/cpu.cfs_period_us"] = "100000"
    mounts = [_v1_mount(top="/docker/x")]
    assert cpu_quota(_tree(tmp_path, mounts, [f"4:cpu,cpuacct:{group}"], files)) == expected


def test_v1_and_v2_together_take_the_tighter(cpu_quota: CpuQuota, tmp_path: Path) -> None:
    top = "sys/fs/cgroup/cpu,cpuacct"
    files = {f"{top}/cpu.cfs_quota_us": "400000", f"{top}/cpu.cfs_period_us": "100000"}
    files["sys/fs/cgroup/unified/cpu.max"] = "200000 100000"
    v2 = V2_MOUNT.replace("/sys/fs/cgroup ", "/sys/fs/cgroup/unified ")
    groups = ["4:cpu,cpuacct:/", "0::/"]
    assert cpu_quota(_tree(tmp_path, [_v1_mount(), v2], groups, files)) == 2


def test_escaped_mount_points_and_long_lines(cpu_quota: CpuQuota, tmp_path: Path) -> None:
    """mountinfo writes a space in a path as \\040; a line longer than the reader's
    buffer (an overlay mount's layers) is skipped whole: its tail, read on its own, would
    be a cgroup2 mount elsewhere."""
    tail = "9 9 0:9 / /elsewhere rw - cgroup2 cgroup2 rw"
    long_line = "1 2 0:1 / /" + "x" * (4095 - 11) + tail
    mount = V2_MOUNT.replace("/sys/fs/cgroup ", "/my\\040cgroups ")
    files = {"my cgroups/cpu.max": "100000 100000"}
    assert cpu_quota(_tree(tmp_path, [long_line, mount], ["0::/"], files)) == 1


@pytest.mark.parametrize(
    ("mounts", "groups"),
    [
        ([], ["0::/"]),  # no cgroup file system mounted
        ([V2_MOUNT], []),  # in no group
        (["29 23 0:26 / /sys/fs/cgroup rw cgroup2 cgroup2 rw"], ["0::/"]),  # no "-"
        ([V2_MOUNT], ["0:/", "garbage"]),  # malformed group lines
        (["34 25 0:30 / /sys/fs/cgroup rw - cgroup cgroup rw,cpuset"], ["3:cpuset:/"]),
    ],
)
def test_no_quota_where_none_can_be_read(
    cpu_quota: CpuQuota, tmp_path: Path, mounts: list[str], groups: list[str]
) -> None:
    files = {"sys/fs/cgroup/cpu.max": "100000 100000"}
    files |= {"sys/fs/cgroup/cpu.cfs_quota_us": "100000", "sys/fs/cgroup/cpu.cfs_period_us": "1"}
    assert cpu_quota(_tree(tmp_path, mounts, groups, files)) == 0


def test_no_files_at_all(cpu_quota: CpuQuota, tmp_path: Path) -> None:
    assert cpu_quota(str(tmp_path / "nothing").encode()) == 0
