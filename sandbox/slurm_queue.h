// Why Slurm keeps a worker's srun in its queue. srun says only that the job waits ("srun: job 12
// queued and waiting for resources"), not why (a drained node, other jobs holding the GPUs), so
// the supervisor asks squeue about that one job: when the wait starts, then once a minute
// (sandbox/evaluator.cc), never in a busy loop.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kopt {

// The job id in srun's "srun: job 12 queued and waiting for resources", if it said so.
std::optional<std::string> queued_srun_job(const std::string& srun_stderr);

// The squeue to ask about jobs of the srun in a launcher command ("/opt/slurm/bin/srun" ->
// "/opt/slurm/bin/squeue"); nullopt when the command runs no srun.
std::optional<std::string> squeue_for(const std::vector<std::string>& launcher);

// squeue's pending reason for `job` ("Resources", "Nodes required for job are DOWN, DRAINED or
// reserved for jobs in higher priority partitions");
// nullopt when squeue cannot say (job gone, slurmctld unreachable within 5 s, no reason yet).
std::optional<std::string> slurm_pending_reason(const std::string& squeue, const std::string& job);

}  // namespace kopt
