#include "tests/integration/grafana_exprs.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"

namespace llmserve::testing {
namespace {

using json = nlohmann::json;

// Walks `node`, appending each "expr" string; `where` names the innermost titled object.
void Walk(const json& node, const std::string& where, std::vector<DashboardExpr>* out) {
  if (node.is_array()) {
    for (const json& child : node) Walk(child, where, out);
    return;
  }
  if (!node.is_object()) return;
  std::string here = where;
  if (node.contains("title") && node["title"].is_string()) {
    here = absl::StrCat("'", node["title"].get<std::string>(), "'");
  }
  if (node.contains("expr") && node["expr"].is_string()) {
    const std::string ref = node.value("refId", "");
    const std::string where_expr = absl::StrCat("panel ", here, ref.empty() ? "" : " target " + ref);
    out->push_back({where_expr, node["expr"].get<std::string>()});
  }
  for (const auto& [key, child] : node.items()) {
    if (key != "templating") Walk(child, here, out);
  }
}

// A Grafana variable query as PromQL.
absl::StatusOr<std::string> VariableQueryToPromQL(std::string q) {
  q = std::string(absl::StripAsciiWhitespace(q));
  absl::string_view body(q);
  if (absl::ConsumePrefix(&body, "label_values(") && absl::ConsumeSuffix(&body, ")")) {
    const size_t comma = body.rfind(',');
    if (comma == absl::string_view::npos) return absl::InvalidArgumentError("label_values without a metric: " + q);
    const std::string metric(absl::StripAsciiWhitespace(body.substr(0, comma)));
    const std::string label(absl::StripAsciiWhitespace(body.substr(comma + 1)));
    return absl::StrCat("count by (", label, ") (", metric, ")");
  }
  body = q;
  if (absl::ConsumePrefix(&body, "query_result(") && absl::ConsumeSuffix(&body, ")")) return std::string(body);
  return absl::InvalidArgumentError("unsupported Grafana variable query (extend grafana_exprs.cc): " + q);
}

}  // namespace

absl::StatusOr<std::vector<DashboardExpr>> CollectDashboardExprs(const json& dashboard) {
  std::vector<DashboardExpr> out;
  Walk(dashboard, "(dashboard)", &out);
  if (!dashboard.contains("templating")) return out;
  for (const json& var : dashboard["templating"].value("list", json::array())) {
    if (var.value("type", "") != "query") continue;
    const json& q = var.contains("query") ? var["query"] : json();
    std::string text;
    if (q.is_string()) {
      text = q.get<std::string>();
    } else if (q.is_object() && q.contains("query") && q["query"].is_string()) {
      text = q["query"].get<std::string>();
    } else {
      return absl::InvalidArgumentError("variable " + var.value("name", "?") + " has no query string");
    }
    absl::StatusOr<std::string> promql = VariableQueryToPromQL(text);
    if (!promql.ok()) return promql.status();
    out.push_back({"variable $" + var.value("name", "?"), *promql});
  }
  return out;
}

absl::StatusOr<std::string> SubstituteGrafanaVariables(const std::string& expr,
                                                       const std::vector<std::pair<std::string, std::string>>& vars,
                                                       const std::string& window) {
  std::vector<std::pair<std::string, std::string>> replacements;
  auto add = [&](const std::string& name, const std::string& value) {
    replacements.push_back({"${" + name + "}", value});
    replacements.push_back({"[[" + name + "]]", value});
    replacements.push_back({"$" + name, value});
  };
  // Longest names first, so $__rate_interval is not read as $__rate followed by text.
  for (const char* builtin : {"__rate_interval", "__interval", "__range"}) add(builtin, window);
  for (const auto& [name, value] : vars) add(name, value);
  std::string out = expr;
  for (const auto& [from, to] : replacements) out = absl::StrReplaceAll(out, {{from, to}});
  if (const size_t dollar = out.find('$'); dollar != std::string::npos) {
    return absl::InvalidArgumentError("unknown Grafana variable at '" + out.substr(dollar, 30) + "' in: " + expr);
  }
  return out;
}

}  // namespace llmserve::testing
