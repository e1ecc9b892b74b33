/* cli.h - the commands of the `lms` front end. */
#ifndef LMS_CLI_CLI_H
#define LMS_CLI_CLI_H

#include "lms/lms.h"

/* `lms demo`: returns the process exit status. */
int lms__cli_demo(const lms_options_t *base);

#endif
