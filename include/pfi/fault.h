/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The `fault` device backend: another backend (default emu) with failures
 * injected after a number of calls, for tests of cap restoration and error
 * handling. Open it with pfi_device_open(&dev, "fault", params, &err);
 * params are documented in docs/nvml.md ("The fault backend"), e.g.
 * "fail_set_after=3,mode=transient,code=gpulost,inner_params=gpus=4".
 */
#ifndef PFI_FAULT_H
#define PFI_FAULT_H

#include "pfi/device.h"

/*
 * The wrapped session of a fault session (borrowed: it is closed with
 * `dev`), for backend-specific calls such as pfi_emu_attach(); NULL when
 * `dev` is not a fault session. Calls made on it directly are not counted
 * and never fail by injection.
 */
struct pfi_device *pfi_fault_inner(struct pfi_device *dev);

#endif
