// TextGenerator's refusals and its sampling rules (the trained case is
// DashboardText's and CliText's).
#include <deepcanvas/errors.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/text_generator.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "test_util.h"

namespace dc {
namespace {

const std::vector<std::string> kVocab{"", "a", "b", "c", "d"};

TEST(TextGenerator, RefusesANetworkWithoutTokenInputOrWithAnotherVocabularySize) {
  register_builtin_layers();
  Graph image;
  // A vector input of 6 values is not 6 tokens.
  NodeId x = image.add_node("Input", "input", test::attrs({{"shape", std::vector<int64_t>{6}}}));
  image.connect(x, image.add_node("Dense", "fc", test::attrs({{"units", int64_t(5)}})));
  Plan ip(image, 1);
  EXPECT_FALSE(reads_tokens(image));
  EXPECT_FALSE(input_is_tokens(ip.steps()));
  const std::string e1 = test::error_of([&] { TextGenerator g(ip, kVocab); });
  EXPECT_NE(e1.find("token sequence"), std::string::npos) << e1;

  const Graph g7 = test::every_step_model(6, 7);
  Plan tp(g7, 1);
  // The graph's and the plan's answers agree (the editor asks the graph).
  EXPECT_TRUE(reads_tokens(g7));
  EXPECT_TRUE(input_is_tokens(tp.steps()));
  const std::string e2 = test::error_of([&] { TextGenerator g(tp, kVocab); });
  EXPECT_NE(e2.find("vocabulary has 5 tokens but the network predicts 7"), std::string::npos) << e2;
}

TEST(TextGenerator, KeepsThePromptNamesUnknownCharactersAndNeverEmitsPadding) {
  const Graph g5 = test::every_step_model(6, 5);
  Plan p(g5, 1);
  p.init_params(3);
  TextGenerator g(p, kVocab);
  EXPECT_EQ(g.encode("dab", "x"), (std::vector<int32_t>{4, 1, 2}));
  const std::string e = test::error_of([&] { g.encode("abz", "The prompt"); });
  EXPECT_NE(e.find("The prompt: the character 'z' never occurs"), std::string::npos) << e;

  GenerateOptions o;
  o.length = 200;
  o.temperature = 5;  // nearly uniform: every character of the vocabulary shows up
  const std::string text = g.generate("ab", o);
  ASSERT_EQ(text.size(), 202u);
  EXPECT_EQ(text.substr(0, 2), "ab");
  std::set<char> seen(text.begin() + 2, text.end());
  EXPECT_EQ(seen, (std::set<char>{'a', 'b', 'c', 'd'}));  // no padding byte
  EXPECT_EQ(g.generate("ab", o), text);                   // the seed decides
  o.seed = 2;
  EXPECT_NE(g.generate("ab", o), text);
  // top_k = 1: always the likeliest, whatever the temperature and seed.
  o.top_k = 1;
  const std::string greedy = g.generate("ab", o);
  o.seed = 9;
  EXPECT_EQ(g.generate("ab", o), greedy);
  // Cancelled after 5 characters: the text so far.
  int asked = 0;
  EXPECT_EQ(g.generate("ab", o, [&] { return ++asked > 5; }).size(), 7u);
}

}  // namespace
}  // namespace dc
