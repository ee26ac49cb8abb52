// Spotting a kernel the model already wrote. A stalling model answers with the same file again,
// or with the same code re-indented, re-commented or with its variables and kernel renamed; none
// of that is a new candidate, and judging it again would only spend the night's budget. The
// fingerprint is the SHA-256 of the file's tokens with comments dropped (except the kopt:plan
// launch plan, which is part of the candidate), whitespace ignored, and every identifier that
// is not a keyword, type or built-in of CUDA C++ renamed in order of first appearance (in the
// code and in the plan's strings alike, so a renamed kernel matches its plan). Numbers and
// operators are kept: BLOCK=256 and BLOCK=512 are different candidates.
#pragma once

#include <string>
#include <string_view>

namespace kopt::orchestrator {

// The normalized token stream, one token per line (for tests and for debugging a match).
std::string normalized_kernel(std::string_view source);

// SHA-256 (hex) of normalized_kernel(source): equal for repeats and near-repeats.
std::string kernel_fingerprint(std::string_view source);

}  // namespace kopt::orchestrator
