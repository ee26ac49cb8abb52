// The morning report as one self-contained HTML page: inline CSS, inline SVG charts, the diffs of
// the wins embedded behind anchors. No scripts, fonts, images or links leave the file, so it opens
// from a mail attachment or an air-gapped machine.
#pragma once

#include <string>

#include "src/report/report_data.h"

namespace kopt::report {

std::string render_html(const ReportData& data);

}  // namespace kopt::report
