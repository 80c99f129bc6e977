// SPDX-License-Identifier: Apache-2.0
#include "app/name_pattern.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

#include "pyebpf/error.hpp"

namespace pyebpf::app {
namespace {

TEST(NamePattern, MatchesTheJoinedCommandLineLikePgrepF) {
  NamePattern p("gunicorn.*app:app");
  EXPECT_TRUE(p.matches("/usr/bin/python3 /usr/bin/gunicorn -w 4 app:app"));
  EXPECT_FALSE(p.matches("/usr/bin/python3 /usr/bin/celery worker"));
  EXPECT_FALSE(p.matches(""));  // kernel threads have no command line
  EXPECT_TRUE(NamePattern("^/usr/bin/python3 -m").matches("/usr/bin/python3 -m http.server"));
}

TEST(NamePattern, BadRegexIsAOneLineErrorWithTheFix) {
  try {
    NamePattern p("gunicorn(");
    FAIL() << "accepted an unbalanced parenthesis";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--name 'gunicorn('"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("pgrep -f"), std::string::npos);
  }
}

// The needle BPF checks exec'd command lines for must be in every match:
// a prefilter may let too much through, never too little.
TEST(NamePattern, NeedleIsALiteralEveryMatchContains) {
  EXPECT_EQ(NamePattern("gunicorn").needle(32), "gunicorn");
  EXPECT_EQ(NamePattern("gunicorn: worker.*myapp").needle(32), "gunicorn: worker");
  EXPECT_EQ(NamePattern("^python3? manage\\.py").needle(32), " manage");  // "3" is optional, "\." not literal
  EXPECT_EQ(NamePattern("celerys*x").needle(32), "celery");
  EXPECT_EQ(NamePattern("ab+cdef").needle(32), "cdef");
  EXPECT_EQ(NamePattern("x(optional)?yz").needle(32), "yz");  // inside a group: maybe not there
  EXPECT_EQ(NamePattern("[gG]unicorn").needle(32), "unicorn");
  EXPECT_EQ(NamePattern("[]x]abc").needle(32), "abc");
  EXPECT_EQ(NamePattern("uwsgi|gunicorn").needle(32), "");  // either: no single literal
  EXPECT_EQ(NamePattern(".*").needle(32), "");
  EXPECT_EQ(NamePattern("abcdefghij").needle(4), "abcd");
  // Every match of each pattern contains its needle.
  for (const auto& [pattern, line] :
       std::vector<std::pair<std::string, std::string>>{{"^python3? manage\\.py", "python manage.py runserver"},
                                                        {"ab+cdef", "abbbcdef"},
                                                        {"x(optional)?yz", "xyz"},
                                                        {"[gG]unicorn", "Gunicorn"}}) {
    NamePattern p(pattern);
    ASSERT_TRUE(p.matches(line)) << pattern;
    EXPECT_NE(line.find(p.needle(32)), std::string::npos) << pattern;
  }
}

TEST(NamePattern, ScanFindsThisProcessUnlessExcluded) {
  // The test binary's own command line holds its path.
  NamePattern p("pyebpf_unit_tests");
  auto found = p.scan({});
  EXPECT_NE(std::find(found.begin(), found.end(), getpid()), found.end());
  auto excluded = p.scan(self_and_ancestors());
  EXPECT_EQ(std::find(excluded.begin(), excluded.end(), getpid()), excluded.end());
}

}  // namespace
}  // namespace pyebpf::app
