// Reading srun's queue line and finding the squeue beside an srun, without a cluster
// (tests/slurm/ asks a real slurmctld for a drained node's reason).
#include "sandbox/slurm_queue.h"

#include <gtest/gtest.h>

namespace kopt {
namespace {

TEST(SlurmQueue, TheJobIdComesFromSrunsQueueLine) {
  EXPECT_EQ(queued_srun_job("srun: job 1234 queued and waiting for resources\n"), "1234");
  EXPECT_EQ(queued_srun_job("srun: Required node not available (down, drained or reserved)\n"
                            "srun: job 7 queued and waiting for resources\n"),
            "7");
  EXPECT_FALSE(queued_srun_job("srun: error: Unable to allocate resources: Invalid partition\n"));
  EXPECT_FALSE(queued_srun_job(""));
}

TEST(SlurmQueue, SqueueIsTheOneBesideTheTemplatesSrun) {
  EXPECT_EQ(squeue_for({"srun", "--gres=gpu:1", "w"}), "squeue");
  EXPECT_EQ(squeue_for({"env", "A=1", "/opt/slurm/bin/srun", "w"}), "/opt/slurm/bin/squeue");
  EXPECT_FALSE(squeue_for({"ssh", "gpu7", "w"}));
  EXPECT_FALSE(squeue_for({}));
}

TEST(SlurmQueue, NoSqueueIsNoReason) {
  EXPECT_FALSE(slurm_pending_reason("/nonexistent/squeue", "1"));
}

}  // namespace
}  // namespace kopt
