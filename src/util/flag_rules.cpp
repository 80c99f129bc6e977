// SPDX-License-Identifier: Apache-2.0
#include "util/flag_rules.hpp"

#include <fmt/format.h>

#include <sys/types.h>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

#include "util/http.hpp"

namespace pyebpf::flags {
namespace {

constexpr const char* kPidNeeded = "-p needs a PID, e.g. -p 4242";

// A whole decimal number: from_chars rejects "", "1x", " 1" and hex.
std::optional<double> parse_number(const std::string& text) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::string number_text(double v) {
  return fmt::format("{}", v);
}

std::string range_words(const NumberRule& r) {
  const std::string unit = r.unit.empty() ? "" : " " + r.unit;
  if (r.whole && r.max > 0) {
    return fmt::format("a whole number from {} to {}{}", number_text(r.min), number_text(r.max), unit);
  }
  if (r.max > 0) return fmt::format("{} to {}{}", number_text(r.min), number_text(r.max), unit);
  const std::string kind = r.whole ? "a whole number " : "";
  return fmt::format("{}{} {}{}", kind, r.min_inclusive ? ">=" : ">", number_text(r.min), unit);
}

bool holds(const NumberRule& r, double v) {
  if (r.min_inclusive ? v < r.min : v <= r.min) return false;
  if (r.max > 0 && v > r.max) return false;
  return !r.whole || std::trunc(v) == v;  // no cast: 1e30 is no long long
}

}  // namespace

NumberRule above_zero(std::string unit, std::string example) {
  return {.min = 0, .min_inclusive = false, .unit = std::move(unit), .example = std::move(example)};
}

NumberRule zero_or_more(std::string unit, std::string example) {
  return {.min = 0, .min_inclusive = true, .unit = std::move(unit), .example = std::move(example)};
}

NumberRule between(double min, double max, std::string unit, std::string example) {
  return {.min = min, .max = max, .unit = std::move(unit), .example = std::move(example)};
}

NumberRule whole(double min, double max, std::string unit, std::string example) {
  return {.min = min, .max = max, .whole = true, .unit = std::move(unit), .example = std::move(example)};
}

CLI::Option* check(CLI::Option* option, NumberRule rule, std::string flag) {
  if (flag.empty()) flag = option->get_name();
  return option->check(CLI::Validator(
      [rule, flag](std::string& value) -> std::string {
        auto v = parse_number(value);
        if (v && holds(rule, *v)) return {};
        return fmt::format("{} must be {}, e.g. {} {} (got '{}')", flag, range_words(rule), flag, rule.example, value);
      },
      "", ""));
}

CLI::Option* check_pid(CLI::Option* option) {
  return option->check(CLI::Validator(
      [](std::string& value) -> std::string {
        auto v = parse_number(value);
        if (v && *v >= 1 && *v <= std::numeric_limits<pid_t>::max() && *v == static_cast<double>(static_cast<long>(*v)))
          return {};
        return fmt::format("{} (got '{}')", kPidNeeded, value);
      },
      "", ""));
}

CLI::Option* check_http_url(CLI::Option* option) {
  const std::string flag = option->get_name();
  return option->check(CLI::Validator(
      [flag](std::string& value) -> std::string {
        if (auto problem = http_url_problem(value)) {
          return fmt::format("{} needs http(s)://HOST[:PORT], e.g. {} http://127.0.0.1:8123 ({})", flag, flag,
                             *problem);
        }
        // A password there would be readable in ps and kept in stored runs' command line.
        if (url_has_credentials(value)) {
          return fmt::format(
              "{} must not hold a user or password: use --clickhouse-user and "
              "PYEBPF_CLICKHOUSE_PASSWORD",
              flag);
        }
        return {};
      },
      "", ""));
}

std::string describe(const CLI::ParseError& error) {
  std::string text = error.what();
  auto sep = text.find(": ");
  // "--pid: 1 required INT missing": the flag came last, with no value.
  const std::string flag = sep == std::string::npos ? "" : text.substr(0, sep);
  const bool names_flag = flag.size() > 1 && flag[0] == '-' && flag.find(' ') == std::string::npos;
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) && names_flag) {
    return flag == "--pid" ? kPidNeeded : flag + " needs a value";
  }
  bool own_sentence = sep != std::string::npos && sep + 2 < text.size() && text[sep + 2] == '-';
  if (dynamic_cast<const CLI::ValidationError*>(&error) && own_sentence) return text.substr(sep + 2);
  return text;
}

}  // namespace pyebpf::flags
