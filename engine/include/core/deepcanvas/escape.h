#pragma once
// Strings from a project, a model or a dataset (names, paths, columns) go
// into generated code and configuration only through these functions, one
// per target language, never pasted: a shared project must not be able to
// add a statement, a YAML key or a shell command to what the user runs
// (issue 29). Each result is one line and holds only characters that are
// printable in its target; what is not is written as an escape the target
// reads back to the original text (or, for comments and prose, shows it).
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace dc::escape {

// A Python string literal with its double quotes: evaluates to s (invalid
// UTF-8 bytes become U+FFFD). Printable non-ASCII stays as it is.
std::string py_str(const std::string& s);
// py_str without the quotes: text for a docstring or a comment (quotes and
// backslashes escaped, so it cannot close a """ string or continue a line).
std::string py_text(const std::string& s);
// A JSON value (a project's settings) as a Python literal: dicts, lists,
// py_str strings, numbers, True/False/None. Non-finite numbers become None.
std::string py_literal(const nlohmann::json& j, int indent = 4);

// A YAML double-quoted scalar that reads back as s (YAML 1.1 and 1.2: the
// line breaks U+0085/U+2028/U+2029 and every non-printable are escaped).
std::string yaml_str(const std::string& s);

// One line of text for a comment (#) in Python, YAML or a Dockerfile, or
// for prose: controls, line and paragraph separators, bidi overrides and
// invalid bytes are shown as \xHH / \uXXXX.
std::string line_text(const std::string& s);
// line_text for Markdown prose: also escapes what would start HTML, a link,
// a table cell or a code span.
std::string md_text(const std::string& s);
// An inline Markdown code span (with its backticks) showing line_text(s).
std::string md_code(const std::string& s);

// One POSIX shell word that the shell reads back as s: bare when it only
// has safe characters, else in single quotes, else (controls, invalid
// UTF-8) as bash's $'...' with \xHH escapes.
std::string sh_word(const std::string& s);

// Checks, for values whose form the target fixes: a Kubernetes object name
// (DNS-1123 label), a decimal integer, a container image reference. They
// return s unchanged or throw Error naming `what`.
std::string k8s_name(const std::string& s, const std::string& what);
std::string decimal(const std::string& s, const std::string& what);
std::string image_ref(const std::string& s, const std::string& what);

// The escape named `context` ("py_str", "py_text", "py_literal" (s is JSON
// text), "yaml_str", "line", "md_text", "md_code", "sh", "k8s_name",
// "decimal", "image") applied to s; throws Error for an unknown context.
std::string apply(const std::string& context, const std::string& s, const std::string& what);

}  // namespace dc::escape
