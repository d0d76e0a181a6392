# Included at llama.cpp's top-level project(): at the end of its configuration, every target other
# than llama-server leaves the default build, so `cmake --build .` compiles llama-server and what it
# links, and none of the other tools.
function(_so_middleware_server_only dir)
    get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
    foreach(target IN LISTS targets)
        get_target_property(kind "${target}" TYPE)
        if(NOT kind STREQUAL "INTERFACE_LIBRARY" AND NOT target STREQUAL "llama-server")
            set_target_properties("${target}" PROPERTIES EXCLUDE_FROM_ALL TRUE)
        endif()
    endforeach()
    get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
    foreach(subdir IN LISTS subdirs)
        _so_middleware_server_only("${subdir}")
    endforeach()
endfunction()
cmake_language(DEFER CALL _so_middleware_server_only "${CMAKE_SOURCE_DIR}")
