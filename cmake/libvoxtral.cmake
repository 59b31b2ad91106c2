# libvoxtral, the installable library, and the install rules (included from CMakeLists.txt once
# the modules and the tools exist).
#
# The library is the engine and everything under it: the same object files as the vox_MODULE
# static libraries that the tools and tests link (compiled once, position-independent), plus
# the CUDA kernels when the CUDA backend is built. Two forms from those objects:
#   voxtral_shared  libvoxtral.so.X.Y, exporting only the functions of include/voxtral/*.h
#                   (linker version script cmake/libvoxtral.map);
#   voxtral_static  libvoxtral.a.
# Installed: bin/ (the three tools), lib/ (both libraries), include/voxtral/*.h, lib/pkgconfig/
# voxtral.pc, lib/cmake/voxtral/ (find_package(voxtral): voxtral::voxtral), share/doc/.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The modules: vox_engine and every vox_* library it links, directly or not (the graph of
# vox_module() calls in CMakeLists.txt, conditional items such as vox_kernels included when
# their target exists), so that a new module of the engine joins the library by itself.
function(vox_collect_modules target)
  get_property(seen GLOBAL PROPERTY VOX_LIB_MODULES)
  if(target IN_LIST seen OR NOT TARGET ${target})
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY VOX_LIB_MODULES ${target})
  get_target_property(links ${target} LINK_LIBRARIES)
  if(links)
    string(REGEX MATCHALL "vox_[A-Za-z0-9_]+" deps "${links}")
    foreach(dep ${deps})
      vox_collect_modules(${dep})
    endforeach()
  endif()
endfunction()
vox_collect_modules(vox_engine)
get_property(VOX_LIB_MODULES GLOBAL PROPERTY VOX_LIB_MODULES)
set(vox_lib_objects "")
foreach(m ${VOX_LIB_MODULES})
  list(APPEND vox_lib_objects $<TARGET_OBJECTS:${m}>)
endforeach()
list(JOIN VOX_LIB_MODULES " " msg)
message(STATUS "libvoxtral: ${msg}")

# Soname: the major version, or 0.MINOR while the major version is 0 (every 0.x release may
# break the ABI). project(VERSION) is the one number: soname, voxtral_version(), --version, .pc.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(VOX_SOVERSION 0.${PROJECT_VERSION_MINOR})
else()
  set(VOX_SOVERSION ${PROJECT_VERSION_MAJOR})
endif()

# What a program linking libvoxtral needs besides it: the shared library records these itself
# (NEEDED entries); for the static one they are its link interface, in the CMake package and in
# voxtral.pc's Libs.private.
set(vox_lib_deps PkgConfig::SNDFILE PkgConfig::MPG123 PkgConfig::SOXR PkgConfig::CJSON PkgConfig::PCRE2
    Threads::Threads m)
# voxtral.pc names them in Libs.private, not Requires.private: `pkg-config --static` would then
# ask for the static closure of libsndfile (LAME, FLAC, ...), when libvoxtral.a needs only the
# libraries themselves.
set(vox_pc_libs "")
set(vox_pc_dirs ${CMAKE_C_IMPLICIT_LINK_DIRECTORIES})
foreach(p SNDFILE MPG123 SOXR CJSON PCRE2)
  foreach(d ${${p}_LIBRARY_DIRS})
    if(NOT d IN_LIST vox_pc_dirs)
      list(APPEND vox_pc_dirs ${d})
      string(APPEND vox_pc_libs " -L${d}")
    endif()
  endforeach()
  foreach(l ${${p}_LIBRARIES})
    string(APPEND vox_pc_libs " -l${l}")
  endforeach()
endforeach()
if("vox_kernels" IN_LIST VOX_LIB_MODULES)
  # The shared CUDA runtime (the tools link it statically); the kernels' host code is C++.
  # cuBLASLt is loaded at run time (src/backend/cublaslt_loader.h), with dlopen.
  list(APPEND vox_lib_deps CUDA::cudart stdc++ ${CMAKE_DL_LIBS})
  if(NOT CUDAToolkit_LIBRARY_DIR IN_LIST vox_pc_dirs)
    string(APPEND vox_pc_libs " -L${CUDAToolkit_LIBRARY_DIR}")
  endif()
  string(APPEND vox_pc_libs " -lcudart -lstdc++")
  foreach(l ${CMAKE_DL_LIBS})
    string(APPEND vox_pc_libs " -l${l}")
  endforeach()
endif()
if(TARGET OpenMP::OpenMP_C)
  list(APPEND vox_lib_deps OpenMP::OpenMP_C)
  foreach(l ${OpenMP_C_LIB_NAMES})
    string(APPEND vox_pc_libs " -l${l}")
  endforeach()
endif()
string(APPEND vox_pc_libs " ${CMAKE_THREAD_LIBS_INIT} -lm")
string(REGEX REPLACE " +" " " vox_pc_libs "${vox_pc_libs}")
string(STRIP "${vox_pc_libs}" vox_pc_libs)

set(vox_lib_targets "")
function(vox_library target type)
  add_library(${target} ${type} ${vox_lib_objects})
  target_include_directories(${target} INTERFACE
                             $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                             $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${target} PRIVATE ${vox_lib_deps})
  set_target_properties(${target} PROPERTIES OUTPUT_NAME voxtral LINKER_LANGUAGE C
                                             EXPORT_NAME ${target})
  set(vox_lib_targets ${vox_lib_targets} ${target} PARENT_SCOPE)
endfunction()

if(VOX_BUILD_SHARED)
  vox_library(voxtral_shared SHARED)
  set(map ${PROJECT_SOURCE_DIR}/cmake/libvoxtral.map)
  target_link_options(voxtral_shared PRIVATE -Wl,--version-script=${map})
  if(NOT VOX_SANITIZE)
    target_link_options(voxtral_shared PRIVATE -Wl,--no-undefined)
  endif()
  set_target_properties(voxtral_shared PROPERTIES
    VERSION ${PROJECT_VERSION} SOVERSION ${VOX_SOVERSION} LINK_DEPENDS ${map}
    INSTALL_RPATH_USE_LINK_PATH ON)   # keeps the CUDA library directory in its RUNPATH
endif()
if(VOX_BUILD_STATIC)
  vox_library(voxtral_static STATIC)
endif()
# In-tree users (add_subdirectory) get the same name as find_package users.
if(TARGET voxtral_shared)
  add_library(voxtral::voxtral ALIAS voxtral_shared)
elseif(TARGET voxtral_static)
  add_library(voxtral::voxtral ALIAS voxtral_static)
endif()

# ---- install ----------------------------------------------------------------------------------
set(vox_tools "")
foreach(t voxtral_runner voxtral_export voxtral_tokenize)
  if(TARGET ${t})
    list(APPEND vox_tools ${t})
    # the tools load cuBLASLt from the CUDA directory (dlopen searches the caller's RUNPATH):
    # keep it in the installed RUNPATH
    set_target_properties(${t} PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  endif()
endforeach()
install(TARGETS ${vox_tools} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(vox_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/voxtral)
if(vox_lib_targets)
  install(TARGETS ${vox_lib_targets} EXPORT voxtralTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  # Only include/voxtral/*.h: the headers of src/ are the library's own business.
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/voxtral
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")

  # Whether the library carries the CUDA backend, and OpenMP (the CPU backend's threads).
  set(VOX_PKG_CUDA OFF)
  set(vox_pc_cuda no)
  if("vox_kernels" IN_LIST VOX_LIB_MODULES)
    set(VOX_PKG_CUDA ON)
    set(vox_pc_cuda yes)
  endif()
  set(VOX_PKG_OPENMP OFF)
  if(TARGET OpenMP::OpenMP_C)
    set(VOX_PKG_OPENMP ON)
  endif()

  # voxtral.pc, relocatable: the prefix is found from the file's own place.
  if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
    set(vox_pc_prefix "${CMAKE_INSTALL_PREFIX}")
    set(vox_pc_libdir "${CMAKE_INSTALL_LIBDIR}")
  else()
    file(RELATIVE_PATH rel "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
    string(REGEX REPLACE "/$" "" rel "${rel}")
    set(vox_pc_prefix "\${pcfiledir}/${rel}")
    set(vox_pc_libdir "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  endif()
  if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
    set(vox_pc_includedir "${CMAKE_INSTALL_INCLUDEDIR}")
  else()
    set(vox_pc_includedir "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
  endif()
  configure_file(${PROJECT_SOURCE_DIR}/cmake/voxtral.pc.in ${PROJECT_BINARY_DIR}/voxtral.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/voxtral.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

  # The CMake package: voxtralTargets.cmake (voxtral::voxtral_shared, voxtral::voxtral_static),
  # voxtralConfig.cmake (voxtral::voxtral and the static library's dependencies) and its version.
  install(EXPORT voxtralTargets NAMESPACE voxtral:: DESTINATION ${vox_cmake_dir})
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/voxtralConfig.cmake.in
                                ${PROJECT_BINARY_DIR}/voxtralConfig.cmake
                                INSTALL_DESTINATION ${vox_cmake_dir})
  # 0.x: a new minor version may break the API; from 1.0 on, the major version.
  if(PROJECT_VERSION_MAJOR EQUAL 0)
    set(compat SameMinorVersion)
  else()
    set(compat SameMajorVersion)
  endif()
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/voxtralConfigVersion.cmake
                                   COMPATIBILITY ${compat})
  install(FILES ${PROJECT_BINARY_DIR}/voxtralConfig.cmake
                ${PROJECT_BINARY_DIR}/voxtralConfigVersion.cmake
          DESTINATION ${vox_cmake_dir})
endif()
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
