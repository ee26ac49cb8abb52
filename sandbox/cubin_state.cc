#include "sandbox/cubin_state.h"

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace kopt {
namespace {

// An ELF record of `bytes` at `offset` (NVRTC writes 64-bit little-endian ELF for every sm_*
// target, and kopt's hosts are little-endian); false when it lies outside the file.
template <typename T>
bool read_at(std::string_view bytes, uint64_t offset, T* out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(out, bytes.data() + offset, sizeof(T));
  return true;
}

std::string_view string_at(std::string_view bytes, const Elf64_Shdr& strings, uint32_t index) {
  if (index >= strings.sh_size || strings.sh_offset > bytes.size() ||
      strings.sh_offset + index >= bytes.size())
    return {};
  std::string_view rest = bytes.substr(strings.sh_offset + index);
  size_t end = rest.find('\0');
  return end == std::string_view::npos ? std::string_view{} : rest.substr(0, end);
}

bool is_heap_call(std::string_view name) {
  return name == "free" || name.find("malloc") != std::string_view::npos;
}

}  // namespace

Result<CubinState> read_cubin_state(std::string_view cubin) {
  Elf64_Ehdr header{};
  if (!read_at(cubin, 0, &header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB)
    return make_error("not a 64-bit little-endian ELF file");
  if (header.e_shentsize < sizeof(Elf64_Shdr) || header.e_shstrndx >= header.e_shnum)
    return make_error("malformed ELF header");
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  for (uint16_t i = 0; i < header.e_shnum; ++i) {
    if (!read_at(cubin, header.e_shoff + uint64_t(i) * header.e_shentsize, &sections[i]))
      return make_error("section header " + std::to_string(i) + " lies outside the file");
  }
  CubinState state;
  for (const Elf64_Shdr& s : sections) {
    std::string_view name = string_at(cubin, sections[header.e_shstrndx], s.sh_name);
    if (name == ".nv.global" || name == ".nv.global.init") state.writable_global_bytes += s.sh_size;
    if (s.sh_type != SHT_SYMTAB || s.sh_link >= sections.size()) continue;
    for (uint64_t at = s.sh_offset; at + sizeof(Elf64_Sym) <= s.sh_offset + s.sh_size;
         at += sizeof(Elf64_Sym)) {
      Elf64_Sym symbol{};
      if (!read_at(cubin, at, &symbol)) return make_error("symbol table lies outside the file");
      // An undefined function is a call the driver resolves: the device heap's entry points.
      if (symbol.st_shndx == SHN_UNDEF && ELF64_ST_TYPE(symbol.st_info) == STT_FUNC &&
          is_heap_call(string_at(cubin, sections[s.sh_link], symbol.st_name)))
        state.uses_device_heap = true;
    }
  }
  return state;
}

}  // namespace kopt
