// The daemon's Slurm awareness without a cluster: the GPUs a job was granted, read from its
// environment, and the job names added to an srun template (tests/slurm/ runs the real thing).
#include "src/orchestrator/slurm_workers.h"

#include <gtest/gtest.h>

#include <map>

namespace kopt::orchestrator {
namespace {

std::optional<SlurmGrant> grant_from(const std::map<std::string, std::string>& env) {
  return slurm_granted_gpus([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(SlurmWorkers, AJobsGpusComeFromSlurmJobGpusFirst) {
  auto grant = grant_from(
      {{"SLURM_JOB_ID", "812"}, {"SLURM_JOB_GPUS", "4,5,6"}, {"CUDA_VISIBLE_DEVICES", "0,1"}});
  ASSERT_TRUE(grant.has_value());
  EXPECT_EQ(grant->job_id, "812");
  EXPECT_EQ(grant->gpus, 3);
  EXPECT_EQ(grant->source, "SLURM_JOB_GPUS=4,5,6");
  grant = grant_from({{"SLURM_JOB_ID", "9"}, {"CUDA_VISIBLE_DEVICES", "0,1"}});
  ASSERT_TRUE(grant.has_value());
  EXPECT_EQ(grant->gpus, 2);
  EXPECT_EQ(grant->source, "CUDA_VISIBLE_DEVICES=0,1");
  grant = grant_from({{"SLURM_JOB_ID", "9"}, {"SLURM_GPUS_ON_NODE", "8"}});
  ASSERT_TRUE(grant.has_value());
  EXPECT_EQ(grant->gpus, 8);
}

TEST(SlurmWorkers, NoJobOrNoGpusIsNoGrant) {
  EXPECT_FALSE(grant_from({{"CUDA_VISIBLE_DEVICES", "0,1"}}).has_value());  // not in a job
  EXPECT_FALSE(grant_from({{"SLURM_JOB_ID", "9"}}).has_value());
  EXPECT_FALSE(grant_from({{"SLURM_JOB_ID", "9"}, {"SLURM_GPUS_ON_NODE", "x"}}).has_value());
}

TEST(SlurmWorkers, SrunJobsAreNamedAfterTheRunUnlessTheTemplateNamesThem) {
  std::vector<std::string> prefix = {"/usr/bin/srun", "--exact", "--gres=gpu:1"};
  name_srun_job(prefix, 7, 2);
  EXPECT_EQ(prefix, (std::vector<std::string>{"/usr/bin/srun", "--job-name=kopt-run-7-gpu2",
                                              "--exact", "--gres=gpu:1"}));
  for (const char* named : {"-J", "-Jmine", "--job-name=mine"}) {
    std::vector<std::string> own = {"srun", named, "x"};
    name_srun_job(own, 7, 2);
    EXPECT_EQ(own.size(), 3u) << named;
  }
  std::vector<std::string> ssh = {"ssh", "-T", "gpu7"};
  name_srun_job(ssh, 7, 2);
  EXPECT_EQ(ssh.size(), 3u);
}

}  // namespace
}  // namespace kopt::orchestrator
