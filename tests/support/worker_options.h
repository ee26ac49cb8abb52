// The kopt-sandbox worker the GPU tests start: this build's worker (the test target defines
// KOPT_SANDBOX_WORKER in its CMakeLists.txt) on device 0, with the evaluator's defaults.
#pragma once

#include "sandbox/evaluator.h"

#ifndef KOPT_SANDBOX_WORKER
#error "the test target must define KOPT_SANDBOX_WORKER (the path of bin/kopt-sandbox)"
#endif

namespace kopt::testing {

inline SandboxOptions worker_options() {
  SandboxOptions options;
  options.worker = KOPT_SANDBOX_WORKER;
  options.device = 0;
  return options;
}

}  // namespace kopt::testing
