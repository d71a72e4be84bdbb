"""Constants and polynomial coefficients of the vector math kernels in `vecmath`.

Every table is indexed by float width (32 or 64) and lists coefficients from degree 0 up.
The polynomials are weighted minimax fits (Remez exchange in 50-digit arithmetic), rounded
to the target precision; the comments give the interval and the error after rounding.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Consts:
    """Bit layout and thresholds of one float type."""

    bits: int
    mant: int  # explicit mantissa bits
    bias: int
    ln2_hi: float  # ln2 rounded to this precision; ln2_lo is the rest
    ln2_lo: float
    log2e: float
    exp_lo: float  # exp(x) rounds to 0 below this (also below the denormals)
    exp_hi: float  # exp(x) overflows above this, even after the split scaling
    ftz_lo: float  # round(x * log2e) >= 1 - bias from here up: 2**n is normal
    min_normal: float
    denorm_scale: int  # log2 of the factor that makes every denormal normal
    sqrt_half_bits: int  # bit pattern of sqrt(1/2) in this precision
    tiny: float  # below this, expm1(x) and log1p(x) round to x
    tanh_tiny: float  # below this, tanh(x) rounds to x
    tanh_big: float  # above this, tanh(x) rounds to +-1
    erf_big: float  # above this, erf(x) rounds to +-1
    erf_mid: float  # centre of the erf tail fit
    big_int: float  # from here on every float is an integer, so log1p needs no correction
    shifter: float  # 1.5 * 2**mant: adding it rounds to an integer held in the low bits
    shifter_bits: int


CONSTS = {
    32: Consts(
        bits=32,
        mant=23,
        bias=127,
        ln2_hi=0.6931471824645996,
        ln2_lo=-1.9046542121259336e-09,
        log2e=1.4426950216293335,
        exp_lo=-104.0,
        exp_hi=89.0,
        ftz_lo=-87.6,  # -126.38 / log2e
        min_normal=2.0**-126,
        denorm_scale=24,
        sqrt_half_bits=0x3F3504F3,
        tiny=2.0**-26,
        tanh_tiny=2.0**-13,
        tanh_big=20.0,
        erf_big=4.0,
        erf_mid=2.5,
        big_int=2.0**24,
        shifter=1.5 * 2.0**23,
        shifter_bits=0x4B400000,
    ),
    64: Consts(
        bits=64,
        mant=52,
        bias=1023,
        ln2_hi=0.6931471805599453,
        ln2_lo=2.3190468138462996e-17,
        log2e=1.4426950408889634,
        exp_lo=-746.0,
        exp_hi=710.0,
        ftz_lo=-708.6,  # -1022.29 / log2e
        min_normal=2.0**-1022,
        denorm_scale=53,
        sqrt_half_bits=0x3FE6A09E667F3BCD,
        tiny=2.0**-55,
        tanh_tiny=2.0**-28,
        tanh_big=20.0,
        erf_big=6.0,
        erf_mid=3.5,
        big_int=2.0**53,
        shifter=1.5 * 2.0**52,
        shifter_bits=0x4338000000000000,
    ),
}

# q(r) = (expm1(r) - r) / r**2 on |r| <= ln2/2 (+0.02%), relative error of expm1(r):
# f32 1.4e-8, f64 1.2e-17. f32's q is degree 4 (float32 coefficients, 0.5 exact, minimax
# in expm1's relative error): a degree below the 2.9e-9 fit it replaced, so one FMA less
# on the critical path of every exp, tanh and sigmoid (W1 -5%).
EXPM1_Q = {
    32: (
        0.5,
        0.1666654795408249,
        0.041666824370622635,
        0.008366106078028679,
        0.0013900753110647202,
    ),
    64: (
        0.5000000000000001,
        0.1666666666666667,
        0.04166666666665228,
        0.008333333333326148,
        0.0013888888895601163,
        0.00019841269874785263,
        2.480157453298224e-05,
        2.755725543624917e-06,
        2.7567929304483607e-07,
        2.5105204856142897e-08,
        1.7687732014645542e-09,
    ),
}

# f32: P(f) = (log1p(f) - f + f**2/2) / f**3 on f in [sqrt(1/2) - 1, sqrt(2) - 1],
# relative error of log1p(f) 6.4e-9.
LOG_P_F32 = (
    0.3333333134651184,
    -0.2500081956386566,
    0.20001226663589478,
    -0.16623356938362122,
    0.14201755821704865,
    -0.13160185515880585,
    0.12761595845222473,
    -0.07634512335062027,
)

# f64: R(z) = (2 atanh(s) - 2 s) / s with z = s**2, s = f / (2 + f), |s| <= 0.1716;
# coefficients of z**1 .. z**7, absolute error 1.8e-18 (relative to log1p(f): 9e-19).
LOG_R_F64 = (
    0.6666666666666734,
    0.3999999999941467,
    0.2857142874238922,
    0.22222198573004015,
    0.18183564336296185,
    0.15314050272434396,
    0.14795952683660157,
)

# erf(x) / x - 1 as a polynomial in z = x**2 on [0, 1]; relative error f32 2.4e-9, f64 1.1e-17.
ERF_SMALL = {
    32: (
        0.12837916612625122,
        -0.3761262595653534,
        0.1128358542919159,
        -0.026853812858462334,
        0.005188327748328447,
        -0.0008010193705558777,
        7.853861461626366e-05,
    ),
    64: (
        0.1283791670955126,
        -0.3761263890318375,
        0.11283791670954857,
        -0.026866170645072893,
        0.00522397762478086,
        -0.0008548326978741832,
        0.00012055331036885458,
        -1.4925593506537894e-05,
        1.6460972811224488e-06,
        -1.635002516013169e-07,
        1.4657879418312552e-08,
        -1.1365664322068045e-09,
        5.9452589894953e-11,
    ),
}

# h(x) = log(erfc(x)) + x**2 as a polynomial in t = x - erf_mid, on x in [1, erf_big]; weighted
# so that the error of 1 - exp(h - x**2) relative to erf(x) is f32 1.5e-9, f64 4.0e-17.
ERF_TAIL = {
    32: (
        -1.556817889213562,
        -0.35269397497177124,
        0.05611678585410118,
        -0.010711383074522018,
        0.002465274650603533,
        -0.00015201940550468862,
        0.00018637058383319527,
    ),
    64: (
        -1.862437402179099,
        -0.2660995883425412,
        0.03324694737799146,
        -0.005225648809837372,
        0.0008736996967642074,
        -0.000147314094517892,
        2.4309773906361918e-05,
        -3.9965421027808045e-06,
        5.291064180713919e-07,
        -4.6675800260289575e-08,
        9.372399067342381e-08,
        7.214754471846771e-08,
        3.779552384529735e-08,
        1.2726578608573047e-08,
        2.708582557228904e-09,
        3.3965117864293384e-10,
        1.7705561902095688e-11,
    ),
}

# f32 tanh(x) = x * P(x**2) / Q(x**2) for |x| <= TANH_ONE_F32, past which tanh(x) rounds
# to +-1 (13 ln2, where 1 - tanh(x) is half an ulp of 1): a rational fit of tanh(x) / x in
# x**2, minimax in relative error (linearized least squares with Lawson weights, in
# x**2 / 13 ln2 squared for conditioning), 6.7e-9 before the coefficients are rounded.
# In float32 the roundings of the polynomials, the product and the quotient dominate
# (vecmath's table). P(0) = Q(0) = 1.
TANH_ONE_F32 = 9.010912895202637
TANH_P_F32 = (
    1.0,
    0.1308354288339615,
    0.003103434108197689,
    1.1148810699523892e-05,
    -2.0202657324830398e-08,
    5.266911559664855e-11,
    -8.459879796479317e-14,
)
TANH_Q_F32 = (1.0, 0.4641686975955963, 0.024493101984262466, 0.00025453828857280314)
