/* control.h: on/off control of a running profile from another process (`heatline ctl`), and
 * the record of when profiling was on.
 *
 * The shell creates two files private to the user (docs/design-live.md, "On/off control"): a
 * command file that `heatline ctl` replaces with "SEQ on" or "SEQ off", and a state file the
 * engine rewrites with "SEQ on|off" (the last command applied, and the state now). The sampler
 * thread polls the command file at most every HL_CONTROL_POLL_NS: open, read, close. No
 * descriptor is kept between polls and no signal is used, so the program cannot notice.
 */
#ifndef HEATLINE_CONTROL_H
#define HEATLINE_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#define HL_CONTROL_POLL_NS 100000000u /* 100 ms */
#define HL_CONTROL_MAX_CHANGES 4096   /* on/off changes recorded; later ones are counted */

/* The engine part (engine_part.h: hl_control_part) starts with the session, taking the paths of the
 * command and state files from hl_config (NULL: no control from outside; the on/off record is
 * still kept; a path too long fails the start with -ENAMETOOLONG), polls the command file at
 * each wake-up of the sampler thread, paused or not, and ends the record when the session
 * stops. */

/* Pause or resume (heatline.pause()/resume(), or a command), recording the change. */
void hl_control_set_paused(int paused);

/* The periods when profiling was on, as [start, end) pairs in ns since hl_control_start
 * (the last one ends at stop, or now while running). Fills at most `capacity` pairs;
 * returns how many there are. *dropped: changes not recorded (the record was full). */
size_t hl_control_periods(uint64_t (*periods)[2], size_t capacity, uint64_t *dropped);
/* Whether profiling was off at any moment between the session's start and its stop (started
 * paused, or paused since): 0 means the one period is the whole session, whatever the time
 * the stop's own work took after it. */
int hl_control_was_paused(void);

#endif
