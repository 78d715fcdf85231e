// The sweep's largest batch (sweep_board.h), which the CLI's and the app's
// memory checks hold against their parallel trials.
#include <deepcanvas/graph.h>
#include <deepcanvas/search_space.h>
#include <deepcanvas/sweep_board.h>
#include <gtest/gtest.h>

namespace dc {
namespace {

TEST(SweepLargestBatch, IsTheSpacesLargestBatchElseTheSettingsOwn) {
  TrainConfig c;
  c.batch = 48;
  SearchParam stale;
  const SearchParam* from = &stale;  // must be reset
  EXPECT_EQ(largest_batch_config(c, parse_search_space({"lr=log:1e-4:1e-2"}, Graph()), &from).batch,
            48);
  EXPECT_EQ(from, nullptr);
  // A choice's largest value, whatever its place in the list.
  const SearchSpace choice =
      parse_search_space({"batch=choice:32,256,64", "lr=log:1e-4:1e-2"}, Graph());
  EXPECT_EQ(largest_batch_config(c, choice, &from).batch, 256);
  ASSERT_NE(from, nullptr);
  EXPECT_EQ(from->spec_text(), "batch=choice:32,256,64");
  // A range's top.
  EXPECT_EQ(largest_batch_config(c, parse_search_space({"batch=int:16:200"}, Graph())).batch, 200);
  // Nothing else changes.
  EXPECT_EQ(largest_batch_config(c, choice).epochs, c.epochs);
}

}  // namespace
}  // namespace dc
