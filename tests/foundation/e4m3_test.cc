// The e4m3 dtype (OCP FP8 E4M3 "fn"): its name and size, the host decoder the worker reads
// mismatches with (sandbox/e4m3.h), and the device encoder every fill goes through: the
// toolkit's __nv_cvt_double_to_fp8 with saturation, whose host build is the same code
// (cuda_fp8.hpp: the double conversion has no device-only path).
#include "sandbox/e4m3.h"

#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "sandbox/dtype.h"
#include "sandbox/worker/support_kernels_source.h"

namespace kopt {
namespace {

// What the support kernels' from_double<__nv_fp8_e4m3> does (checked against the source below).
uint8_t encode(double v) { return __nv_cvt_double_to_fp8(v, __NV_SATFINITE, __NV_E4M3); }
bool is_nan_code(uint8_t c) { return (c & 0x7f) == 0x7f; }

TEST(E4m3, DtypeNameSizeAndKind) {
  ASSERT_EQ(parse_dtype("e4m3"), DType::kE4M3);
  EXPECT_EQ(dtype_name(DType::kE4M3), "e4m3");
  EXPECT_EQ(dtype_size(DType::kE4M3), 1u);
  EXPECT_TRUE(dtype_is_float(DType::kE4M3));
  auto names = dtype_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "e4m3"), names.end());
  EXPECT_FALSE(parse_dtype("fp8").has_value());
  EXPECT_FALSE(parse_dtype("E4M3").has_value());
}

TEST(E4m3, KnownCodesDecode) {
  EXPECT_EQ(e4m3_to_double(0x00), 0.0);
  EXPECT_TRUE(std::signbit(e4m3_to_double(0x80)));
  EXPECT_EQ(e4m3_to_double(0x38), 1.0);    // 0.0111.000: 2^0
  EXPECT_EQ(e4m3_to_double(0x7e), 448.0);  // the largest finite value
  EXPECT_EQ(e4m3_to_double(0xfe), -448.0);
  EXPECT_EQ(e4m3_to_double(0x78), 256.0);                // exponent 15 is finite (not IEEE)
  EXPECT_EQ(e4m3_to_double(0x01), std::ldexp(1.0, -9));  // smallest subnormal
  EXPECT_EQ(e4m3_to_double(0x07), 7 * std::ldexp(1.0, -9));
  EXPECT_EQ(e4m3_to_double(0x08), std::ldexp(1.0, -6));  // smallest normal
  EXPECT_TRUE(std::isnan(e4m3_to_double(0x7f)));
  EXPECT_TRUE(std::isnan(e4m3_to_double(0xff)));
}

// The host decoder against the toolkit's, on every code.
TEST(E4m3, DecoderMatchesTheToolkitOnEveryCode) {
  for (int c = 0; c < 256; ++c) {
    __nv_fp8_e4m3 v;
    v.__x = static_cast<__nv_fp8_storage_t>(c);
    double toolkit = static_cast<float>(v);
    double ours = e4m3_to_double(static_cast<uint8_t>(c));
    if (is_nan_code(static_cast<uint8_t>(c))) {
      EXPECT_TRUE(std::isnan(ours) && std::isnan(toolkit)) << c;
    } else {
      EXPECT_EQ(ours, toolkit) << "code 0x" << std::hex << c;
      EXPECT_EQ(encode(ours), c) << "round trip of code 0x" << std::hex << c;
    }
  }
}

// The fill's encoder: round to nearest, ties to the even code, subnormals included.
TEST(E4m3, EncoderRoundsToNearestEven) {
  for (int c = 0; c < 0x7e; ++c) {
    double lo = e4m3_to_double(static_cast<uint8_t>(c));
    double hi = e4m3_to_double(static_cast<uint8_t>(c + 1));
    double mid = (lo + hi) / 2;
    int even = (c % 2 == 0) ? c : c + 1;
    EXPECT_EQ(encode(mid), even) << "tie between codes " << c << " and " << c + 1;
    EXPECT_EQ(encode(-mid), even | 0x80) << "negative tie after code " << c;
    EXPECT_EQ(encode(std::nextafter(mid, 0.0)), c) << c;
    EXPECT_EQ(encode(std::nextafter(mid, 1e9)), c + 1) << c;
  }
  EXPECT_EQ(encode(std::ldexp(1.0, -10)), 0x00);  // half the smallest subnormal: tie to 0
  EXPECT_EQ(encode(std::ldexp(1.0, -10) * 1.01), 0x01);
  EXPECT_EQ(encode(3 * std::ldexp(1.0, -10)), 0x02);  // 1.5 subnormal steps: tie to 2
  EXPECT_EQ(encode(1e-30), 0x00);
}

// Saturation to +-448, and no NaN from anything a fill draws (finite values, -inf masking).
TEST(E4m3, EncoderSaturatesAndNeverMakesNan) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(encode(448), 0x7e);
  EXPECT_EQ(encode(464), 0x7e);  // the tie with 480, which e4m3 spends on NaN
  EXPECT_EQ(encode(465), 0x7e);
  EXPECT_EQ(encode(1e300), 0x7e);
  EXPECT_EQ(encode(inf), 0x7e);
  EXPECT_EQ(encode(-1e300), 0xfe);
  EXPECT_EQ(encode(-inf), 0xfe);
  for (double v = -2000; v <= 2000; v += 0.37) EXPECT_FALSE(is_nan_code(encode(v))) << v;
  for (int e = -40; e <= 40; ++e) {
    EXPECT_FALSE(is_nan_code(encode(std::ldexp(1.7, e)))) << e;
    EXPECT_FALSE(is_nan_code(encode(-std::ldexp(1.7, e)))) << e;
  }
}

// The device fill uses exactly the conversion tested above.
TEST(E4m3, SupportKernelsEncodeWithSaturation) {
  std::string source = worker::kSupportKernelSource;
  EXPECT_NE(source.find("#include <cuda_fp8.h>"), std::string::npos);
  EXPECT_NE(source.find("__nv_cvt_double_to_fp8(v, __NV_SATFINITE, __NV_E4M3)"), std::string::npos);
}

}  // namespace
}  // namespace kopt
