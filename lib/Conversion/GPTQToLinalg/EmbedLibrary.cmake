# Writes an MLIR file of the implementation library as a C++ raw string
# literal named ${NAME}.
file(READ "${INPUT}" contents)
get_filename_component(source "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${source}; do not edit.\n"
  "static const char ${NAME}[] = R\"gptqlib(${contents})gptqlib\";\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
