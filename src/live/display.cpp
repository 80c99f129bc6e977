// SPDX-License-Identifier: Apache-2.0
#include "live/display.hpp"

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <clocale>
#include <cstdio>

// Last, and as functions: ncurses' macros (clear(), erase(), refresh()...)
// would rewrite any later code's calls of the same names.
#define NCURSES_NOMACROS
#include <curses.h>

namespace pyebpf::live {

namespace {

// Log lines kept while the screen is taken, printed when it is given back.
constexpr std::size_t kKeptLogLines = 1000;

// Snapshots for a pipe or a file: the same text, a blank line between.
class TextDisplay : public Display {
 public:
  Screen size() const override { return {sinks::report::kWidth, 40}; }
  void show(const std::vector<std::string>& lines) override {
    for (const auto& l : lines) std::fprintf(stdout, "%s\n", l.c_str());
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }
  int key_fd() const override { return -1; }
  std::vector<int> keys() override { return {}; }
  std::string last_warning() const override { return {}; }
};

// The full-screen view. Signals stay with the runner (blocked and read from
// a signalfd before this starts, so ncurses' own handlers never run): every
// way out, q, Ctrl-C, SIGTERM, the target's exit, an exception, ends in the
// destructor, which gives the terminal back.
class TerminalDisplay : public Display {
 public:
  TerminalDisplay() {
    std::setlocale(LC_ALL, "");  // UTF-8 names and paths
    screen_ = newterm(nullptr, stdout, stdin);
    if (!screen_) return;
    cbreak();
    noecho();
    nodelay(stdscr, TRUE);
    keypad(stdscr, TRUE);
    curs_set(0);
    // pyebpf's log would scribble over the screen: keep it until the end.
    auto logger = spdlog::default_logger();
    saved_sinks_ = logger->sinks();
    log_ = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(kKeptLogLines);
    log_->set_pattern("pyebpf: %l: %v");
    logger->sinks() = {log_};
  }
  ~TerminalDisplay() override {
    if (!screen_) return;
    endwin();
    delscreen(screen_);
    spdlog::default_logger()->sinks() = saved_sinks_;
    for (const auto& line : log_->last_formatted()) std::fputs(line.c_str(), stderr);
  }
  bool ok() const { return screen_ != nullptr; }

  Screen size() const override {
    return {static_cast<std::size_t>(std::max(COLS, 20)), static_cast<std::size_t>(std::max(LINES, 8))};
  }
  void show(const std::vector<std::string>& lines) override {
    erase();
    const int rows = std::min<int>(static_cast<int>(lines.size()), LINES);
    for (int i = 0; i < rows; ++i) {
      if (i == 0) attron(A_REVERSE);
      // Whole lines: render() cut them to COLS columns (addnstr's limit
      // would count the bytes of a UTF-8 "…" as columns).
      mvaddstr(i, 0, lines[static_cast<std::size_t>(i)].c_str());
      if (i == 0) attroff(A_REVERSE);
    }
    refresh();
  }
  int key_fd() const override { return STDIN_FILENO; }
  std::vector<int> keys() override {
    std::vector<int> out;
    for (int key = getch(); key != ERR; key = getch()) out.push_back(key);
    return out;
  }
  std::string last_warning() const override {
    const auto kept = log_->last_raw();
    for (auto it = kept.rbegin(); it != kept.rend(); ++it) {
      if (it->level >= spdlog::level::warn)
        return fmt::format("{}: {}", spdlog::level::to_string_view(it->level), it->payload);
    }
    return {};
  }

 private:
  SCREEN* screen_ = nullptr;
  std::vector<spdlog::sink_ptr> saved_sinks_;
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> log_;
};

}  // namespace

std::unique_ptr<Display> make_display() {
  if (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)) {
    auto terminal = std::make_unique<TerminalDisplay>();
    if (terminal->ok()) return terminal;
  }
  return std::make_unique<TextDisplay>();
}

}  // namespace pyebpf::live
