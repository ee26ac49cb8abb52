#include "sandbox/cubin_state.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace kopt {
namespace {

// ELF64 little-endian layout (the CUBIN format NVRTC writes for every sm_* target).
constexpr size_t kHeaderBytes = 64;
constexpr size_t kSectionBytes = 64;
constexpr size_t kSymbolBytes = 24;
constexpr uint32_t kSymtab = 2;
constexpr uint8_t kFunctionType = 2;

template <typename T>
bool read_at(std::string_view bytes, uint64_t offset, T* out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(out, bytes.data() + offset, sizeof(T));
  return true;
}

struct Section {
  uint32_t name = 0, type = 0, link = 0;
  uint64_t offset = 0, size = 0;
};

std::string_view string_at(std::string_view bytes, const Section& strings, uint32_t index) {
  if (index >= strings.size || strings.offset > bytes.size() ||
      strings.offset + index >= bytes.size())
    return {};
  std::string_view rest = bytes.substr(strings.offset + index);
  size_t end = rest.find('\0');
  return end == std::string_view::npos ? std::string_view{} : rest.substr(0, end);
}

bool is_heap_call(std::string_view name) {
  return name == "free" || name.find("malloc") != std::string_view::npos;
}

}  // namespace

Result<CubinState> read_cubin_state(std::string_view cubin) {
  if (cubin.size() < kHeaderBytes || cubin.substr(0, 4) != std::string_view("\x7f\x45LF", 4) ||
      cubin[4] != 2 || cubin[5] != 1)
    return make_error("not a 64-bit little-endian ELF file");
  uint64_t section_offset = 0;
  uint16_t section_size = 0, section_count = 0, names_index = 0;
  if (!read_at(cubin, 0x28, &section_offset) || !read_at(cubin, 0x3A, &section_size) ||
      !read_at(cubin, 0x3C, &section_count) || !read_at(cubin, 0x3E, &names_index) ||
      section_size < kSectionBytes || names_index >= section_count)
    return make_error("malformed ELF header");
  std::vector<Section> sections(section_count);
  for (uint16_t i = 0; i < section_count; ++i) {
    uint64_t at = section_offset + uint64_t(i) * section_size;
    Section& s = sections[i];
    if (!read_at(cubin, at, &s.name) || !read_at(cubin, at + 4, &s.type) ||
        !read_at(cubin, at + 24, &s.offset) || !read_at(cubin, at + 32, &s.size) ||
        !read_at(cubin, at + 40, &s.link))
      return make_error("section header " + std::to_string(i) + " lies outside the file");
  }
  CubinState state;
  for (const Section& s : sections) {
    std::string_view name = string_at(cubin, sections[names_index], s.name);
    if (name == ".nv.global" || name == ".nv.global.init") state.writable_global_bytes += s.size;
    if (s.type != kSymtab || s.link >= sections.size()) continue;
    for (uint64_t at = s.offset; at + kSymbolBytes <= s.offset + s.size; at += kSymbolBytes) {
      uint32_t symbol_name = 0;
      uint8_t info = 0;
      uint16_t section_index = 0;
      if (!read_at(cubin, at, &symbol_name) || !read_at(cubin, at + 4, &info) ||
          !read_at(cubin, at + 6, &section_index))
        return make_error("symbol table lies outside the file");
      // An undefined function is a call the driver resolves: the device heap's entry points.
      if (section_index == 0 && (info & 0xF) == kFunctionType &&
          is_heap_call(string_at(cubin, sections[s.link], symbol_name)))
        state.uses_device_heap = true;
    }
  }
  return state;
}

}  // namespace kopt
