// What the daemon's children may see of its environment and which limits they start under. The
// daemon's environment holds API keys; its children run model-written code (the GPU worker) or
// compile it (kopt-compile), so each gets an allow-list, never the whole environment.
#pragma once

#include <string>
#include <vector>

#include "common/subprocess.h"

namespace kopt {

// True for names that look like they hold a credential (KEY, TOKEN, SECRET, PASSWORD,
// CREDENTIAL in any case): left out even when an allowed prefix matches them.
bool is_secret_name(const std::string& name);

// The GPU worker's environment: what CUDA, the toolkit, Slurm's srun and kopt's own settings
// (KOPT_*) read; nothing else, and no secret-looking name.
std::vector<std::string> worker_environment();

// The confined compiler's environment: enough to find the toolkit and its libraries.
std::vector<std::string> compiler_environment();

// Limits safe for a CUDA process: no core dumps (a worker's memory holds its keyed-checksum
// secret), bounded file size and descriptor count. Never RLIMIT_AS: CUDA reserves terabytes of
// virtual address space.
std::vector<ResourceLimit> worker_limits();

}  // namespace kopt
