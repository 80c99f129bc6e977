// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <CLI/CLI.hpp>
#include <string>

// Checks for command-line values whose failure message a tired person
// understands: the flag, its real range in words and a valid example,
// e.g. "--duration must be > 0 seconds, e.g. --duration 60 (got '-1')".
// CLI11's own range checks print the limits of a double to 300 digits.
namespace pyebpf::flags {

// The range a number must fall in, and how to say it.
struct NumberRule {
  double min = 0;
  bool min_inclusive = true;  // false: the value must be above min
  double max = 0;             // 0: no upper limit
  bool whole = false;         // integers only
  std::string unit;           // "seconds", "ms", "frames" ...
  std::string example;        // a valid value, shown in the message
};

// > 0 unit (e.g. seconds between summaries).
NumberRule above_zero(std::string unit, std::string example);
// >= 0 unit (e.g. a threshold where 0 means "every one").
NumberRule zero_or_more(std::string unit, std::string example);
// min to max unit.
NumberRule between(double min, double max, std::string unit, std::string example);
// A whole number from min to max (max 0: no upper limit).
NumberRule whole(double min, double max, std::string unit, std::string example);

// Adds the rule's check to `option`; the message names `flag` (default: the
// option's long name).
CLI::Option* check(CLI::Option* option, NumberRule rule, std::string flag = {});

// -p/--pid values: positive integers.
CLI::Option* check_pid(CLI::Option* option);

// An http(s) URL with a host (parsed by libcurl, which will use it).
CLI::Option* check_http_url(CLI::Option* option);

// The line to print for a CLI11 parse error: a failed rule above is its own
// sentence ("--duration must be ..."), so CLI11's "NAME: " prefix goes.
std::string describe(const CLI::ParseError& error);

}  // namespace pyebpf::flags
