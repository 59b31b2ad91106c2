/* The status codes live in the public header; modules include them through this name. */
#include "voxtral/status.h"
