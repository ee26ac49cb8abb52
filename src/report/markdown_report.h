// The morning report as markdown for a pull request description: headline numbers, a table per
// task, the wins with their summaries and diffs folded in <details> blocks.
#pragma once

#include <string>

#include "src/report/report_data.h"

namespace kopt::report {

std::string render_markdown(const ReportData& data);

}  // namespace kopt::report
