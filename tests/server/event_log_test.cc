// A job's event log: numbering, its newest events in memory and the older
// ones read through Options::older, reads in batches.
#include "server/event_log.h"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

namespace accumulus::server {
namespace {

v1::JobEvent Text(const std::string& text) {
  v1::JobEvent event;
  event.mutable_log()->set_text(text);
  return event;
}

std::vector<int64_t> Sequences(const std::deque<v1::JobEvent>& events) {
  std::vector<int64_t> out;
  for (const v1::JobEvent& e : events) out.push_back(e.sequence());
  return out;
}

// Stands in for the state database: every event appended, as stored.
struct Store {
  std::vector<v1::JobEvent> events;
  int reads = 0;
  EventLog::OlderEvents Reader() {
    return [this](int64_t after, int max) -> StatusOr<std::vector<v1::JobEvent>> {
      ++reads;
      std::vector<v1::JobEvent> out;
      for (const v1::JobEvent& e : events) {
        if (e.sequence() > after && static_cast<int>(out.size()) < max) out.push_back(e);
      }
      return out;
    };
  }
};

TEST(EventLog, WithoutAnOlderSourceEveryEventStaysInMemory) {
  EventLog log("job-1");
  for (int i = 0; i < 50; ++i) log.Append(Text("e"), false);
  EXPECT_EQ(log.events_in_memory(), 50u);
  std::deque<v1::JobEvent> read;
  ASSERT_TRUE(log.ReadAfter(0, 100, &read).ok());
  EXPECT_EQ(read.size(), 50u);
}

TEST(EventLog, KeepsItsNewestEventsAndReadsOlderOnesFromTheStore) {
  Store store;
  EventLog log("job-1", EventLog::Options{3, store.Reader()});
  for (int i = 1; i <= 10; ++i) {
    store.events.push_back(log.Append(Text("e" + std::to_string(i)), i == 10));
  }
  EXPECT_EQ(log.events_in_memory(), 3u);
  EXPECT_EQ(log.last_sequence(), 10);
  EXPECT_TRUE(log.closed());

  std::deque<v1::JobEvent> read;
  ASSERT_TRUE(log.ReadAfter(0, 100, &read).ok());
  EXPECT_EQ(Sequences(read), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7}))
      << "up to where memory begins, in one read of the store";
  EXPECT_EQ(store.reads, 1);
  read.clear();
  ASSERT_TRUE(log.ReadAfter(7, 100, &read).ok());
  EXPECT_EQ(Sequences(read), (std::vector<int64_t>{8, 9, 10}));
  EXPECT_EQ(store.reads, 1) << "the newest from memory";
  read.clear();
  ASSERT_TRUE(log.ReadAfter(2, 2, &read).ok());
  EXPECT_EQ(Sequences(read), (std::vector<int64_t>{3, 4})) << "at most max";
  read.clear();
  ASSERT_TRUE(log.ReadAfter(10, 100, &read).ok());
  EXPECT_TRUE(read.empty()) << "nothing after the last";
}

TEST(EventLog, ARestoredLogGoesOnNumberingAfterItsStoredEvents) {
  Store store;
  EventLog log("job-1", EventLog::Options{2, store.Reader()});
  std::vector<v1::JobEvent> newest;
  for (int64_t s = 4; s <= 5; ++s) {
    v1::JobEvent e = Text("stored");
    e.set_sequence(s);
    newest.push_back(e);
  }
  log.Restore(newest, 5, /*closed=*/false);
  EXPECT_EQ(log.Append(Text("next"), false).sequence(), 6);
  EXPECT_EQ(log.events_in_memory(), 2u);
}

TEST(EventLog, AStoreThatCannotBeReadIsAnErrorNotAGap) {
  EventLog log("job-1",
               EventLog::Options{1, [](int64_t, int) -> StatusOr<std::vector<v1::JobEvent>> {
                                   return Status::Unavailable("disk gone");
                                 }});
  for (int i = 0; i < 3; ++i) log.Append(Text("e"), false);
  std::deque<v1::JobEvent> read;
  const Status status = log.ReadAfter(0, 10, &read);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(read.empty());
}

}  // namespace
}  // namespace accumulus::server
