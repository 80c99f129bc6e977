// SPDX-License-Identifier: Apache-2.0
// Record: a value is read only as the kind it holds, so a cleared or absent
// field can never pass for data; deliver() counts only threads' events for
// their targets.
#include "sinks/record.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include "sinks/capture_sink.hpp"
#include "test_support.hpp"
#include "trackers/common/bpf_counters.hpp"
#include "trackers/common/tracker.hpp"
#include "trackers/host_net_health/host_net_health_events.hpp"
#include "trackers/py_stack/py_stack_events.hpp"

namespace pyebpf::sinks {
namespace {

namespace f = thread_fields;

TEST(Record, AClearedFieldHoldsNoValue) {
  Record r(trackers::py_stack_schema());
  r.set_uint(f::pid, 42);
  ASSERT_EQ(r.uint_value(f::pid), 42u);
  r.clear();
  EXPECT_FALSE(r.has(f::pid));
  EXPECT_THROW(r.uint_value(f::pid), std::logic_error);
  EXPECT_THROW(r.int_value(f::pid), std::logic_error);
}

TEST(Record, ValuesAreReadOnlyAsTheKindTheyHold) {
  Record r(trackers::py_stack_schema());
  r.set_text(f::comm, "python3");
  EXPECT_THROW(r.uint_value(f::comm), std::logic_error);
  EXPECT_THROW(r.float_value(f::comm), std::logic_error);
  EXPECT_THROW(r.bool_value(f::comm), std::logic_error);
  EXPECT_THROW(r.time_us(f::comm), std::logic_error);
  EXPECT_THROW(r.uint_value(f::tid), std::logic_error) << "never set";
  // Integers read either way while the value fits (runs read back from storage).
  r.set_int(f::ts_us, 7);
  EXPECT_EQ(r.uint_value(f::ts_us), 7u);
  r.set_int(f::ts_us, -7);
  EXPECT_THROW(r.uint_value(f::ts_us), std::logic_error);
  r.set_uint(f::pid, 1u << 31);
  EXPECT_EQ(r.int_value(f::pid), std::int64_t{1} << 31);
  EXPECT_THROW(r.uint_value(static_cast<FieldId>(r.schema().columns().size())), std::logic_error);
}

// Field 3 is a thread's pid only in thread events: host_net_health's is the
// namespace's inode, which must not be counted as a target's event.
TEST(Deliver, HostEventsAreCountedForNoTarget) {
  test::FakeTargets targets;
  CaptureSink sink;
  trackers::EventCounts counts;
  const auto& host = trackers::host_net_health_schema();
  Record host_event(host);
  host_event.set_uint(host.netns, 4026531840u);
  trackers::deliver(trackers::Decoded::Event, host_event, targets, sink, counts);
  EXPECT_TRUE(targets.counted.empty());

  Record thread_event(trackers::py_stack_schema());
  thread_event.set_uint(f::pid, 0);  // a thread of no target (tcp_loss --net-scope host)
  trackers::deliver(trackers::Decoded::Event, thread_event, targets, sink, counts);
  EXPECT_TRUE(targets.counted.empty());
  thread_event.set_uint(f::pid, 1234);
  trackers::deliver(trackers::Decoded::Event, thread_event, targets, sink, counts);
  EXPECT_EQ(targets.counted.size(), 1u);
  EXPECT_EQ(targets.counted[1234], 1u);
  EXPECT_EQ(sink.records.size(), 3u);
  EXPECT_EQ(counts.emitted, 3u);

  trackers::deliver(trackers::Decoded::Malformed, thread_event, targets, sink, counts);
  EXPECT_EQ(counts.malformed, 1u);
  EXPECT_EQ(sink.records.size(), 3u);
}

TEST(MalformedNote, NamesMalformedRecordsApartFromAFullRing) {
  EXPECT_EQ(trackers::malformed_note(0), "");
  EXPECT_EQ(trackers::malformed_note(3), ", 3 malformed records (a pyebpf bug: please report it)");
}

}  // namespace
}  // namespace pyebpf::sinks
