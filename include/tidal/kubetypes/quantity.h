#pragma once
// Kubernetes resource quantities ("16Gi", "500m", "2e3", "1.5G").
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tidal {

// The quantity's value in base units, rounded up to an integer as Kubernetes'
// Quantity.Value() does. On failure returns nullopt and sets `error` to a message
// naming `field` and what was expected.
std::optional<std::int64_t> ParseQuantity(std::string_view text, std::string_view field,
                                          std::string* error);
// ParseQuantity that also tells whether rounding changed the value ("0.5" → 1 with
// *rounded true), so callers needing a whole number (a GPU count) reject fractions exactly.
std::optional<std::int64_t> ParseQuantityRounded(std::string_view text, std::string_view field,
                                                 std::string* error, bool* rounded);
// The value in thousandths (Quantity.MilliValue()), rounded up: "500m" → 500, "2" → 2000.
std::optional<std::int64_t> ParseQuantityMilli(std::string_view text, std::string_view field,
                                               std::string* error);

// Human-readable bytes for messages and tables: "24Gi", "12544Mi", "1.5Gi".
std::string FormatBytes(std::int64_t bytes);
// The same text written at `p` (at most kMaxBytesText characters); returns its end.
inline constexpr std::size_t kMaxBytesText = 32;
char* WriteBytes(char* p, std::int64_t bytes);
// Bytes as text that ParseQuantity reads back to the same value (for files that are
// loaded again, such as check-config's output): "24Gi" for a whole binary unit,
// else the plain integer ("1025"), never a rounded "1.0Ki". INT64_MIN has no such text.
std::string FormatBytesExact(std::int64_t bytes);

}  // namespace tidal
