#pragma once
// Text helpers for messages about user input.
#include <string>
#include <string_view>

namespace tidal {

// Quotes user text for an error message: escaped (quotes, backslashes, control
// bytes as \xNN) and cut at 64 bytes, so a huge or binary value cannot flood a log.
std::string QuoteInput(std::string_view text);

}  // namespace tidal
