// The PromQL a Grafana dashboard runs, made runnable against a plain Prometheus: every
// `expr` string anywhere in the dashboard JSON (panel targets, rows' nested panels,
// annotations) and every templating variable of type "query", with Grafana's variables
// replaced by concrete values.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace llmserve::testing {

// One expression and where it came from ("panel 'KV cache usage' target B").
struct DashboardExpr {
  std::string where;
  std::string expr;  // as written in the dashboard, Grafana variables included
};

// Collects every `expr` string (recursively) and every query variable of `dashboard`.
// A variable query `label_values(M, L)` becomes `count by (L) (M)`, `query_result(Q)`
// becomes Q; any other Grafana-only function is an error.
absl::StatusOr<std::vector<DashboardExpr>> CollectDashboardExprs(const nlohmann::json& dashboard);

// Replaces $var / ${var} / [[var]] for each `vars` entry (name → value) and Grafana's
// built-in $__rate_interval, $__interval and $__range by `window` (e.g. "1m"). An error
// names any `$` left over, so a dashboard that gains a variable makes the test say so.
absl::StatusOr<std::string> SubstituteGrafanaVariables(const std::string& expr,
                                                       const std::vector<std::pair<std::string, std::string>>& vars,
                                                       const std::string& window);

}  // namespace llmserve::testing
