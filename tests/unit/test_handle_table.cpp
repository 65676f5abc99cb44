#include "catch.hpp"
#include "handle_table.hpp"

using hivecl::HandleTable;
using namespace hivecl::protocol;

TEST_CASE("the handle table answers only for live ids of the right kind", "[handles]") {
  HandleTable table;
  int context = 0, buffer = 0;
  const ObjectId id = first_session_id + 1;
  REQUIRE(table.insert(id, ObjectKind::context, &context));
  CHECK(table.find(id, ObjectKind::context) == &context);
  CHECK(table.find(id, ObjectKind::mem) == nullptr);         // wrong kind
  CHECK(table.find(id + 1, ObjectKind::context) == nullptr);  // unknown id
  CHECK_FALSE(table.insert(id, ObjectKind::mem, &buffer));    // id in use
  CHECK_FALSE(table.is_free(id));
  CHECK_FALSE(table.erase(id, ObjectKind::mem).has_value());  // wrong kind leaves it
  CHECK(table.erase(id, ObjectKind::context)->native == &context);
  CHECK(table.find(id, ObjectKind::context) == nullptr);
  CHECK(table.is_free(id));
}

TEST_CASE("ids below the session range are refused", "[handles]") {
  HandleTable table;
  int object = 0;
  CHECK_FALSE(table.insert(0, ObjectKind::context, &object));
  CHECK_FALSE(table.insert(first_session_id - 1, ObjectKind::context, &object));
  CHECK_FALSE(table.is_free(5));
}

TEST_CASE("teardown takes every entry", "[handles]") {
  HandleTable table;
  int a = 0, b = 0;
  table.insert(first_session_id, ObjectKind::mem, &a);
  table.insert(first_session_id + 7, ObjectKind::event, &b);
  CHECK(table.take_all().size() == 2);
  CHECK(table.size() == 0);
}
