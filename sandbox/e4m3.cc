#include "sandbox/e4m3.h"

#include <cmath>
#include <limits>

namespace kopt {

double e4m3_to_double(uint8_t bits) {
  int exponent = (bits >> 3) & 0xf, mantissa = bits & 0x7;
  double magnitude;
  if (exponent == 0xf && mantissa == 0x7)
    magnitude = std::numeric_limits<double>::quiet_NaN();
  else if (exponent == 0)
    magnitude = std::ldexp(mantissa, -9);  // subnormal: 0.MMM x 2^-6
  else
    magnitude = std::ldexp(8 + mantissa, exponent - 10);  // 1.MMM x 2^(E-7)
  return (bits & 0x80) ? -magnitude : magnitude;
}

}  // namespace kopt
