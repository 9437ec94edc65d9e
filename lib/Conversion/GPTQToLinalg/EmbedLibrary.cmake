# Writes the MLIR implementation library as a C++ raw string literal.
file(READ "${INPUT}" contents)
file(WRITE "${OUTPUT}.tmp"
  "// Generated from Library.mlir; do not edit.\n"
  "static const char kGPTQLibrarySource[] = R\"gptqlib(${contents})gptqlib\";\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
