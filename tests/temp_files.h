/* For tests of code that writes through temporary files: how many are left behind. */
#ifndef VOX_TEST_TEMP_FILES_H
#define VOX_TEST_TEMP_FILES_H

#include <dirent.h>
#include <string.h>

/* Entries of dir, hidden or not, whose name ends in .tmp (a writer's temporary file). */
static inline int temporaries_in(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        n += len > 4 && strcmp(e->d_name + len - 4, ".tmp") == 0;
    }
    if (d) closedir(d);
    return n;
}

#endif
