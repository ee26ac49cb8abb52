// The CLI's subcommands: one table, each entry with its own --help.
#pragma once

#include <string>
#include <vector>

namespace kopt::cli {

// argv[0] is the subcommand name; returns the process exit code.
using CommandFn = int (*)(int argc, char** argv);

struct Command {
  const char* name;
  const char* summary;
  CommandFn run;
};

const std::vector<Command>& commands();

// Implemented one per file (cmd_*.cc).
int run_doctor(int argc, char** argv);
int run_tasks(int argc, char** argv);
int run_eval(int argc, char** argv);
int run_memory(int argc, char** argv);
int run_export(int argc, char** argv);
int run_run(int argc, char** argv);
int run_status(int argc, char** argv);
int run_submit(int argc, char** argv);
int run_report(int argc, char** argv);
int run_baselines(int argc, char** argv);
int run_compare(int argc, char** argv);

}  // namespace kopt::cli
