#pragma once
// Text helpers for messages about user input.
#include <string>
#include <string_view>

namespace tidal {

// Quotes user text for an error message: escaped (quotes, backslashes, control
// bytes as \xNN) and cut at 64 bytes, so a huge or binary value cannot flood a log.
std::string QuoteInput(std::string_view text);

// True when text is well-formed UTF-8 (no overlong forms, surrogates or code
// points above U+10FFFF). YAML is Unicode text: other bytes do not survive a
// dump and reload, so config strings must pass this.
bool IsValidUtf8(std::string_view text);

// ASCII letters compared without case (Go's JSON keys, "True" in annotations).
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

}  // namespace tidal
