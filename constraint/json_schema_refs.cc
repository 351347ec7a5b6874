// The compilation context: $ref resolution (local JSON pointers and anchors), the
// compiled definitions, and work bounds.
//
// References are normalized to "#" + JSON pointer (escapes kept: "#/definitions/a~1b") or
// "#name" for anchors. A reference to the document's own $id is local; any other URI is a
// remote reference and refused. Definitions are compiled once, on first use, from a work
// list (so a chain of references costs no stack); a definition needed while it is being
// compiled (a recursion that goes through an allOf or through siblings of $ref, which must
// be merged) is refused, since merging would not terminate.
#include <cctype>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "constraint/json_schema_ir.h"
#include "constraint/regex_parser.h"

namespace llmserve::constraint::json_schema {
namespace {

constexpr uint64_t kMaxWork = 200'000;

Draft DetectDraft(const Json& root) {
  if (!root.is_object() || !root.contains("$schema") || !root["$schema"].is_string()) return Draft::k202012;
  const std::string& s = root["$schema"].get_ref<const std::string&>();
  if (s.find("draft-04") != std::string::npos || s.find("draft-03") != std::string::npos) return Draft::k4;
  if (s.find("draft-06") != std::string::npos) return Draft::k6;
  if (s.find("draft-07") != std::string::npos) return Draft::k7;
  if (s.find("2019-09") != std::string::npos) return Draft::k201909;
  return Draft::k202012;
}

std::string StripFragment(std::string s) {
  if (auto h = s.find('#'); h != std::string::npos) s.resize(h);
  return s;
}

std::string PercentDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

SchemaPtr MakeAny() {
  static const SchemaPtr any = std::make_shared<const Schema>();
  return any;
}

SchemaPtr MakeUnsat(std::string reason) {
  Schema s;
  s.kind = Schema::Kind::kUnsat;
  s.text = std::move(reason);
  return Make(std::move(s));
}

SchemaPtr Make(Schema s) { return std::make_shared<const Schema>(std::move(s)); }

std::string PointerEscape(const std::string& segment) {
  std::string out;
  for (char c : segment) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out.push_back(c);
  }
  return out;
}

std::string PathText(const std::string& path) { return path.empty() ? "the root" : path; }

absl::Status Unsupported(const std::string& what, const std::string& path) {
  return absl::InvalidArgumentError(absl::StrCat("unsupported keyword \"", what, "\" at ", PathText(path)));
}

absl::Status BadValue(const std::string& keyword, const std::string& path, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("invalid \"", keyword, "\" at ", PathText(path), ": ", why));
}

Context::Context(const Json* root, uint32_t max_depth) : root_(root), max_depth_(max_depth) {
  draft_ = DetectDraft(*root);
  if (root->is_object()) {
    for (const char* key : {"$id", "id"}) {
      if (root->contains(key) && (*root)[key].is_string()) {
        root_id_ = StripFragment((*root)[key].get<std::string>());
        if (!root_id_.empty()) break;
      }
    }
  }
  // Anchors: "$anchor": "name", or an "$id"/"id" that is only a fragment ("#name").
  std::vector<const Json*> stack{root};
  size_t visited = 0;
  while (!stack.empty() && visited < 1'000'000) {
    const Json* n = stack.back();
    stack.pop_back();
    ++visited;
    if (n->is_object()) {
      if (n->contains("$anchor") && (*n)["$anchor"].is_string()) {
        std::string anchor = "#";
        anchor += (*n)["$anchor"].get_ref<const std::string&>();
        anchors_.emplace(std::move(anchor), n);
      }
      for (const char* key : {"$id", "id"}) {
        if (n->contains(key) && (*n)[key].is_string()) {
          const std::string& id = (*n)[key].get_ref<const std::string&>();
          if (id.size() > 1 && id[0] == '#') anchors_.emplace(id, n);
        }
      }
      for (const auto& [k, v] : n->items()) {
        if (k != "enum" && k != "const" && k != "examples" && k != "default" && v.is_structured()) {
          stack.push_back(&v);
        }
      }
    } else if (n->is_array()) {
      for (const Json& v : *n) {
        if (v.is_structured()) stack.push_back(&v);
      }
    }
  }
}

absl::Status Context::Tick() {
  if (++work_ > kMaxWork) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the schema needs more than ", kMaxWork, " compilation steps"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Context::NormalizeRef(const std::string& ref, const std::string& path) const {
  std::string r = ref;
  if (!root_id_.empty() && r.compare(0, root_id_.size(), root_id_) == 0) r = r.substr(root_id_.size());
  if (r.empty()) return std::string("#");
  if (r[0] != '#') {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported keyword \"$ref\" at ", PathText(path), ": remote reference \"", ref, "\""));
  }
  std::string fragment = PercentDecode(std::string_view(r).substr(1));
  if (fragment.empty() || fragment == "/") return std::string("#");
  if (fragment[0] == '/') return "#" + fragment;
  std::string anchor = "#" + fragment;
  if (!anchors_.contains(anchor)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid \"$ref\" at ", PathText(path), ": no anchor \"", fragment, "\""));
  }
  return anchor;
}

absl::StatusOr<const Json*> Context::Lookup(const std::string& ref) const {
  if (ref == "#") return root_;
  if (ref.size() < 2 || ref[1] != '/') {
    auto it = anchors_.find(ref);
    if (it == anchors_.end()) return absl::InvalidArgumentError(absl::StrCat("$ref \"", ref, "\" not found"));
    return it->second;
  }
  const Json* node = root_;
  for (absl::string_view seg : absl::StrSplit(absl::string_view(ref.data() + 2, ref.size() - 2), '/')) {
    std::string key;
    for (size_t i = 0; i < seg.size(); ++i) {
      if (seg[i] == '~' && i + 1 < seg.size() && (seg[i + 1] == '0' || seg[i + 1] == '1')) {
        key.push_back(seg[i + 1] == '0' ? '~' : '/');
        ++i;
      } else {
        key.push_back(seg[i]);
      }
    }
    if (node->is_object() && node->contains(key)) {
      node = &(*node)[key];
    } else if (node->is_array() && !key.empty() && key.size() < 10 &&
               key.find_first_not_of("0123456789") == std::string::npos && std::stoul(key) < node->size()) {
      node = &(*node)[std::stoul(key)];
    } else {
      return absl::InvalidArgumentError(absl::StrCat("$ref \"", ref, "\" not found in the schema"));
    }
  }
  return node;
}

void Context::Use(const std::string& ref) {
  if (!defs_.contains(ref) && !in_progress_.contains(ref)) pending_.push_back(ref);
}

absl::StatusOr<SchemaPtr> Context::Resolve(const std::string& ref, uint32_t depth) {
  if (auto it = defs_.find(ref); it != defs_.end()) return it->second;
  if (in_progress_.contains(ref)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unsupported keyword \"$ref\": \"", ref,
        "\" is used recursively through allOf or next to other keywords, which cannot be merged"));
  }
  auto node = Lookup(ref);
  if (!node.ok()) return node.status();
  in_progress_.insert(ref);
  std::string path = ref.size() > 1 && ref[1] == '/' ? ref.substr(1) : std::string();
  auto s = BuildSchema(*this, **node, path, depth + 1);
  in_progress_.erase(ref);
  if (!s.ok()) return s.status();
  defs_[ref] = *s;
  return *s;
}

absl::Status Context::CompilePending() {
  while (!pending_.empty()) {
    std::string ref = std::move(pending_.back());
    pending_.pop_back();
    if (defs_.contains(ref)) continue;
    if (auto s = Resolve(ref, 0); !s.ok()) return s.status();
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> Context::PatternMatches(const std::string& pattern, const std::string& name,
                                             const std::string& path) {
  auto it = pattern_cache_.find(pattern);
  if (it == pattern_cache_.end()) {
    RegexParseOptions opts;
    opts.search = true;
    auto re = CompileRegex(pattern, opts, RegexEncoding::kUtf8, pattern_pool_);
    if (!re.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("unsupported \"pattern\" at ", PathText(path), ": ",
                                                     re.status().message()));
    }
    it = pattern_cache_.emplace(pattern, *re).first;
  }
  if (auto s = Tick(); !s.ok()) return s;
  return RegexFullMatch(pattern_pool_, it->second, name);
}

}  // namespace llmserve::constraint::json_schema
