# Included after every project() call while pip compiles llama-cpp-python (see setup/venv.sh).
if(PROJECT_NAME STREQUAL "llama.cpp")
  # llama-cpp-python forces LLAMA_BUILD_COMMON on, but the common library (chat parsers, argument
  # parsing, downloads, Jinja) serves only llama.cpp's own tools and the multimodal library, which
  # critique does not build: the Python bindings load libllama and libggml alone. Leaving it out
  # saves about 40% of the compile.
  set(LLAMA_BUILD_COMMON OFF CACHE BOOL "llama: build common utils library" FORCE)

  # libllama (model loading, graphs, KV cache, vocabulary, grammar) at -O1 instead of -O3: 25% less
  # to compile (5:47 -> 4:24 CPU minutes, 3:16 -> 2:32 alone on 2 cores), and the embedded model ran
  # as fast (the same run of 57 calls: 98.3 s against 98.7 s). The arithmetic is in libggml-cpu,
  # which keeps -O3. Deferred to the end of this directory, once the llama target exists.
  function(_critique_llama_at_o1)
    target_compile_options(llama PRIVATE -O1)
  endfunction()
  cmake_language(DEFER CALL _critique_llama_at_o1)
endif()

if(PROJECT_NAME STREQUAL "ggml")
  # Intel AMX off. -march=native turns on ggml's AMX kernels on a processor that has AMX (Sapphire
  # Rapids and later), and with them llama.cpp repacks Q4_1 and Q8_0 weights into its AMX buffer,
  # where reading a prompt crashed (segmentation fault in llama_decode: the shipped Q4_1 file
  # on any prompt, the F16 file when logits of every position are kept). Without AMX those weights
  # run on the AVX-512 / AVX2 kernels, as on every other x86 processor. Added to ggml-cpu's own
  # options, after -march=native, so that the later -mno-amx-* wins.
  include(CheckCCompilerFlag)
  check_c_compiler_flag(-mno-amx-int8 _critique_has_mno_amx)
  function(_critique_no_amx)
    if(_critique_has_mno_amx AND TARGET ggml-cpu)
      target_compile_options(ggml-cpu PRIVATE -mno-amx-tile -mno-amx-int8 -mno-amx-bf16)
    endif()
  endfunction()
  cmake_language(DEFER CALL _critique_no_amx)
endif()
