// The one rule for an architecture from a compute capability, and the dtype table every dtype
// question reads (issue 38: one rule, one function; one table per enum).
#include <gtest/gtest.h>

#include "sandbox/compiler.h"
#include "sandbox/dtype.h"

namespace kopt {
namespace {

TEST(ArchOfComputeCapability, HopperAndLaterGetTheArchitectureSpecificTarget) {
  EXPECT_EQ(arch_of_compute_capability(8, 0), "sm_80");
  EXPECT_EQ(arch_of_compute_capability(8, 9), "sm_89");
  EXPECT_EQ(arch_of_compute_capability(9, 0), "sm_90a");
  EXPECT_EQ(arch_of_compute_capability(10, 0), "sm_100a");
  EXPECT_TRUE(is_valid_arch(arch_of_compute_capability(9, 0)));
}

TEST(ArchOfComputeCapability, ReadsTheDeviceJsonSpellingAndRefusesOtherText) {
  EXPECT_EQ(arch_of_compute_capability("9.0"), "sm_90a");
  EXPECT_EQ(arch_of_compute_capability("8.6"), "sm_86");
  EXPECT_EQ(arch_of_compute_capability("12.0"), "sm_120a");
  for (const char* bad : {"", "9", "9.", ".0", "x.0", "9.10", "123.0", "9.0a"})
    EXPECT_EQ(arch_of_compute_capability(std::string(bad)), "") << bad;
}

TEST(DTypeTable, EveryNameParsesBackAndEveryFactMatches) {
  for (const std::string& name : dtype_names()) {
    auto dtype = parse_dtype(name);
    ASSERT_TRUE(dtype.has_value()) << name;
    EXPECT_EQ(dtype_name(*dtype), name);
  }
  EXPECT_EQ(dtype_names().size(), 6u);
  EXPECT_EQ(dtype_size(DType::kF32), 4u);
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
  EXPECT_EQ(dtype_size(DType::kI64), 8u);
  EXPECT_EQ(dtype_size(DType::kE4M3), 1u);
  EXPECT_TRUE(dtype_is_float(DType::kE4M3));
  EXPECT_FALSE(dtype_is_float(DType::kI32));
  EXPECT_STREQ(dtype_cpp_type(DType::kBF16), "__nv_bfloat16");
  EXPECT_STREQ(dtype_cpp_type(DType::kI64), "long long");
  EXPECT_FALSE(parse_dtype("float32").has_value());
}

}  // namespace
}  // namespace kopt
