/*
 * Private to eq_bootloader: the backend ops table and the eq_bl object.
 *
 * Backends deal in variables, not in policy. Every backend stores the same
 * four text variables (BOOT_ORDER, BOOT_A_LEFT, BOOT_B_LEFT, BOOT_TRIAL);
 * parsing them, validating them and the transitions (try once, mark good,
 * mark bad, re-arm) live once in bl.c, so the uboot, grub and file backends
 * cannot disagree on what a state means. STYLE 6 lists get_primary,
 * set_primary and commit as well: here they are the shared transitions over
 * get_vars/set_vars, and "commit" is the single atomic set_vars.
 */
#ifndef EQ_BL_PRIV_H
#define EQ_BL_PRIV_H

#include <eq/bootloader.h>

enum eq_bl_var { EQ_BL_VAR_ORDER, EQ_BL_VAR_A_LEFT, EQ_BL_VAR_B_LEFT, EQ_BL_VAR_TRIAL, EQ_BL_VAR__COUNT };

struct eq_bl;
/* The name of variable @v in @bl's environment: the configured one, or
 * RAUC's "BOOT_ORDER", ... by default. */
const char *eq_bl_var_name(const struct eq_bl *bl, enum eq_bl_var v);
/* The variable called @name in @bl's environment, or -1 when it is not one
 * of eqota's. */
int eq_bl_var_find(const struct eq_bl *bl, const char *name, size_t len);

/* The four variables as text; NULL for a variable that is not set.
 * Values are owned by the struct: eq_bl_vars_done() frees them. */
struct eq_bl_vars {
	char *val[EQ_BL_VAR__COUNT];
};
void eq_bl_vars_done(struct eq_bl_vars *v);

struct eq_bl;

/*
 * One backend. The table of them is a static const array in bl.c, searched
 * once by name in eq_bl_open(); every later call goes through bl->ops.
 * Variable names come from eq_bl_var_name(bl, v), never from literals:
 * boards may rename them. bl_uboot.c keeps its libubootenv context in
 * bl->priv; bl_grub.c keeps two copies of the 1024-byte grubenv block and
 * writes the one not in use.
 */
struct eq_bl_ops {
	const char *name;
	/* Used when the config gives no path; NULL: a path is required. */
	const char *default_path;
	/* Backend setup after the common fields are set; may be NULL. */
	eq_err (*open)(struct eq_bl *bl, struct eq_error *err);
	/* Frees bl->priv; may be NULL; called on half-opened objects too. */
	void (*close)(struct eq_bl *bl);
	/*
	 * Fills @ret (zeroed by the caller) with the variables found.
	 * EQ_OK; EQ_ERR_PARSE when parts of the store could not be read (the
	 * message names the line), @ret holding what could; EQ_ERR_NOTFOUND
	 * when there is no store; EQ_ERR_LIMIT, EQ_ERR_IO, EQ_ERR_NOMEM with
	 * @ret empty.
	 */
	eq_err (*get_vars)(struct eq_bl *bl, struct eq_bl_vars *ret, struct eq_error *err);
	/*
	 * Sets all four variables at once (a NULL or empty value: set empty)
	 * so that a power cut leaves the old or the new set, keeping every
	 * other variable. Creates the store when missing. Must refuse
	 * (EQ_ERR_PARSE / EQ_ERR_LIMIT) to overwrite a store it cannot read
	 * completely.
	 */
	eq_err (*set_vars)(struct eq_bl *bl, const struct eq_bl_vars *vars, struct eq_error *err);
};

struct eq_bl {
	const struct eq_bl_ops *ops;
	char *path;
	unsigned good_attempts;
	unsigned try_attempts;
	char *var[EQ_BL_VAR__COUNT]; /* the variables' names */
	void *priv;                  /* backend data */
};

extern const struct eq_bl_ops eq_bl_file_ops;
extern const struct eq_bl_ops eq_bl_grub_ops;
extern const struct eq_bl_ops eq_bl_uboot_ops;

#ifdef EQ_TEST_HOOKS
/* Test hooks of the grub backend (bl_grub.c). The copy get_vars reads
 * (1 = PATH, 2 = PATH.2, 0 = none valid) and each copy's verdict: status
 * EQ_OK valid, EQ_ERR_NOTFOUND, EQ_ERR_PARSE, EQ_ERR_IO, with why[]. */
struct eq_bl_grub_info {
	int winner;
	eq_err status[2];
	unsigned long seq[2];
	char why[2][EQ_ERROR_MSG_MAX];
};
eq_err eq_bl_grub_inspect(struct eq_bl *bl, struct eq_bl_grub_info *ret, struct eq_error *err);
/* When not 0, set_vars stops after its Nth write step as a power cut would
 * (a torn copy included) and returns EQ_ERR_IO "simulated power cut". */
extern unsigned long eq_bl_grub_crash_at;
#endif

/* Cap of the file backend's environment file. */
#define EQ_BL_FILE_MAX (64u * 1024u)

#endif
