# Included after every project() call while pip compiles llama-cpp-python (see the Makefile).
# llama-cpp-python forces LLAMA_BUILD_COMMON on, but the common library (chat parsers, argument
# parsing, downloads, Jinja) serves only llama.cpp's own tools and the multimodal library, which
# critique does not build: the Python bindings load libllama and libggml alone. Leaving it out
# saves about 40% of the compile.
if(PROJECT_NAME STREQUAL "llama.cpp")
  set(LLAMA_BUILD_COMMON OFF CACHE BOOL "llama: build common utils library" FORCE)
endif()
