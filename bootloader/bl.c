/*
 * eq_bootloader: the public API, the backend table and the state logic that
 * every backend shares (parsing and formatting the variables, the
 * transitions). Backends only move the variables in and out (bl_priv.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bl_priv.h"

/* Chosen once by name in eq_bl_open(); uboot and grub join here. */
static const struct eq_bl_ops *const backends[] = {
	&eq_bl_file_ops,
	&eq_bl_grub_ops,
	&eq_bl_uboot_ops,
};

#define N_BACKENDS (sizeof(backends) / sizeof(backends[0]))
#define DEFAULT_GOOD_ATTEMPTS 3u
/* Two boots for a slot on trial: with one, a power cut during the first
 * boot of a new slot looks like a slot that never came up, and the release
 * is rolled back and skipped until a newer one appears (a lost security
 * update). The second boot costs a kernel that really hangs one more
 * watchdog reset (docs/reliability.md). */
#define DEFAULT_TRY_ATTEMPTS 2u

static const char *const default_var_names[EQ_BL_VAR__COUNT] = {
	[EQ_BL_VAR_ORDER] = "BOOT_ORDER",
	[EQ_BL_VAR_A_LEFT] = "BOOT_A_LEFT",
	[EQ_BL_VAR_B_LEFT] = "BOOT_B_LEFT",
	[EQ_BL_VAR_TRIAL] = "BOOT_TRIAL",
};

const char *eq_bl_var_name(const struct eq_bl *bl, enum eq_bl_var v)
{
	return (unsigned)v < EQ_BL_VAR__COUNT ? bl->var[v] : "?";
}

int eq_bl_var_find(const struct eq_bl *bl, const char *name, size_t len)
{
	for (int v = 0; v < EQ_BL_VAR__COUNT; v++)
		if (strlen(bl->var[v]) == len && memcmp(bl->var[v], name, len) == 0)
			return v;
	return -1;
}

/* Names every backend can store and every boot script language can use:
 * GRUB's are the narrowest (letters, digits, '_', not starting with a
 * digit). */
static eq_err check_var_names(const char *const names[EQ_BL_VAR__COUNT], struct eq_error *err)
{
	static const char *const keys[EQ_BL_VAR__COUNT] = {"var_order", "var_a_left", "var_b_left", "var_trial"};
	for (int v = 0; v < EQ_BL_VAR__COUNT; v++) {
		const char *n = names[v];
		size_t len = strlen(n);
		bool ok = len > 0 && len <= 64 && !(n[0] >= '0' && n[0] <= '9');
		for (size_t i = 0; ok && i < len; i++)
			ok = (n[i] >= 'A' && n[i] <= 'Z') || (n[i] >= 'a' && n[i] <= 'z') ||
			     (n[i] >= '0' && n[i] <= '9') || n[i] == '_';
		if (!ok)
			return eq_error_set(err, EQ_ERR_INVAL,
					    "bootloader variable name %s='%.64s': expected 1 to 64 of A-Z a-z 0-9 _, "
					    "not starting with a digit",
					    keys[v], n);
		for (int w = 0; w < v; w++)
			if (strcmp(names[w], n) == 0)
				return eq_error_set(err, EQ_ERR_INVAL,
						    "bootloader variable names %s and %s are both '%s'", keys[w],
						    keys[v], n);
	}
	return EQ_OK;
}

void eq_bl_vars_done(struct eq_bl_vars *v)
{
	for (int i = 0; i < EQ_BL_VAR__COUNT; i++) {
		eq_free(v->val[i]);
		v->val[i] = NULL;
	}
}

const char *eq_bl_slot_name(unsigned slot)
{
	static const char *const names[EQ_BL_SLOTS] = {"A", "B"};
	return slot < EQ_BL_SLOTS ? names[slot] : "?";
}

int eq_bl_slot_index(const char *name)
{
	if (!name)
		return -1;
	if (strcmp(name, "A") == 0)
		return 0;
	if (strcmp(name, "B") == 0)
		return 1;
	return -1;
}

void eq_bl_state_init(struct eq_bl_state *state)
{
	memset(state, 0, sizeof(*state));
	state->trial = -1;
}

int eq_bl_state_pick(const struct eq_bl_state *state)
{
	for (size_t i = 0; i < state->n_order && i < EQ_BL_SLOTS; i++) {
		unsigned s = state->order[i];
		if (s < EQ_BL_SLOTS && state->left[s] > 0)
			return (int)s;
	}
	return -1;
}

bool eq_bl_state_recover(struct eq_bl_state *state, unsigned good_attempts)
{
	if (eq_bl_state_pick(state) >= 0)
		return false;
	if (good_attempts == 0 || good_attempts > EQ_BL_MAX_ATTEMPTS)
		good_attempts = DEFAULT_GOOD_ATTEMPTS;
	bool changed = false;
	for (size_t i = 0; i < state->n_order && i < EQ_BL_SLOTS; i++) {
		unsigned s = state->order[i];
		if (s < EQ_BL_SLOTS && (int)s != state->trial) {
			state->left[s] = good_attempts;
			changed = true;
		}
	}
	if (changed)
		state->trial = -1;
	return changed;
}

/* ---- open / close ------------------------------------------------------ */

static eq_err check_attempts(const char *what, unsigned v, unsigned def, unsigned *ret, struct eq_error *err)
{
	if (v == 0)
		v = def;
	if (v > EQ_BL_MAX_ATTEMPTS)
		return eq_error_set(err, EQ_ERR_INVAL, "%s %u is out of range 1..%u", what, v, EQ_BL_MAX_ATTEMPTS);
	*ret = v;
	return EQ_OK;
}

eq_err eq_bl_open(const struct eq_bl_config *cfg, struct eq_bl **ret, struct eq_error *err)
{
	if (!cfg || !ret)
		return eq_error_set(err, EQ_ERR_INVAL, "no bootloader configuration");
	const struct eq_bl_ops *ops = NULL;
	for (size_t i = 0; i < N_BACKENDS && cfg->backend; i++)
		if (strcmp(backends[i]->name, cfg->backend) == 0)
			ops = backends[i];
	if (!ops) {
		char known[128] = "";
		size_t off = 0;
		for (size_t i = 0; i < N_BACKENDS && off < sizeof(known); i++)
			off += (size_t)snprintf(known + off, sizeof(known) - off, "%s%s", i ? ", " : "",
						backends[i]->name);
		return eq_error_set(err, EQ_ERR_INVAL, "unknown bootloader backend '%s' (known: %s)",
				    cfg->backend ? cfg->backend : "", known);
	}
	unsigned good = 0, try = 0;
	eq_err r = check_attempts("good_attempts", cfg->good_attempts, DEFAULT_GOOD_ATTEMPTS, &good, err);
	if (!r)
		r = check_attempts("try_attempts", cfg->try_attempts, DEFAULT_TRY_ATTEMPTS, &try, err);
	if (r)
		return r;
	const char *names[EQ_BL_VAR__COUNT] = {
		cfg->var_order ? cfg->var_order : default_var_names[EQ_BL_VAR_ORDER],
		cfg->var_a_left ? cfg->var_a_left : default_var_names[EQ_BL_VAR_A_LEFT],
		cfg->var_b_left ? cfg->var_b_left : default_var_names[EQ_BL_VAR_B_LEFT],
		cfg->var_trial ? cfg->var_trial : default_var_names[EQ_BL_VAR_TRIAL],
	};
	if ((r = check_var_names(names, err)))
		return r;
	const char *path = cfg->path ? cfg->path : ops->default_path;
	if (!path || !*path)
		return eq_error_set(err, EQ_ERR_INVAL, "bootloader backend '%s' needs a path", ops->name);
	struct eq_bl *bl = eq_calloc(1, sizeof(*bl));
	if (!bl)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	bl->ops = ops;
	bl->good_attempts = good;
	bl->try_attempts = try;
	bl->path = eq_strdup(path);
	bool names_ok = true;
	for (int v = 0; v < EQ_BL_VAR__COUNT; v++)
		names_ok = (bl->var[v] = eq_strdup(names[v])) && names_ok;
	if (!bl->path || !names_ok) {
		eq_bl_close(bl);
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	}
	if (ops->open && (r = ops->open(bl, err))) {
		eq_bl_close(bl);
		return r;
	}
	*ret = bl;
	return EQ_OK;
}

void eq_bl_close(struct eq_bl *bl)
{
	if (!bl)
		return;
	if (bl->ops && bl->ops->close)
		bl->ops->close(bl);
	eq_free(bl->path);
	for (int v = 0; v < EQ_BL_VAR__COUNT; v++)
		eq_free(bl->var[v]);
	eq_free(bl);
}

const char *eq_bl_backend_name(const struct eq_bl *bl)
{
	return bl ? bl->ops->name : "";
}

/* ---- parsing the variables ---------------------------------------------- */

/* The first problem goes into the message, the rest are counted. */
struct problems {
	const struct eq_bl *bl;
	const char *where;
	unsigned n;
	char first[EQ_ERROR_MSG_MAX];
};

static void problem(struct problems *p, const char *fmt, ...) EQ_PRINTF(2, 3);
static void problem(struct problems *p, const char *fmt, ...)
{
	if (p->n++ > 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->first, sizeof(p->first), fmt, ap);
	va_end(ap);
}

static void parse_order(const char *v, struct eq_bl_state *st, struct problems *p)
{
	char q[48];
	if (!v) {
		st->order[0] = 0;
		st->order[1] = 1;
		st->n_order = 2;
		problem(p, "%s is missing (a boot script uses 'A B')", eq_bl_var_name(p->bl, EQ_BL_VAR_ORDER));
		return;
	}
	st->n_order = 0;
	const char *s = v;
	while (*s) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		const char *tok = s;
		while (*s && *s != ' ' && *s != '\t')
			s++;
		size_t len = (size_t)(s - tok);
		char name[48];
		snprintf(name, sizeof(name), "%.*s", (int)(len < 40 ? len : 40), tok);
		int slot = len == 1 ? eq_bl_slot_index(name) : -1;
		bool dup = false;
		for (size_t i = 0; slot >= 0 && i < st->n_order; i++)
			dup = dup || st->order[i] == (unsigned)slot;
		if (slot < 0) {
			char q2[48];
			problem(p, "%s='%s': unknown slot '%s'%s, skipped as a boot script does",
				eq_bl_var_name(p->bl, EQ_BL_VAR_ORDER), eq_quote(q, sizeof(q), v),
				eq_quote(q2, sizeof(q2), name),
				memchr(tok, ',', len) ? " (slots are separated by spaces)" : "");
		} else if (dup) {
			problem(p, "%s='%s': slot %s is listed twice, the second is skipped",
				eq_bl_var_name(p->bl, EQ_BL_VAR_ORDER), eq_quote(q, sizeof(q), v), name);
		} else {
			st->order[st->n_order++] = (unsigned)slot;
		}
	}
}

static void parse_left(const char *v, unsigned slot, unsigned good, struct eq_bl_state *st, struct problems *p)
{
	char q[48];
	const char *var = eq_bl_var_name(p->bl, slot == 0 ? EQ_BL_VAR_A_LEFT : EQ_BL_VAR_B_LEFT);
	if (!v) {
		st->left[slot] = good;
		problem(p, "%s is missing (a boot script uses %u)", var, good);
	} else if (v[0] >= '0' && v[0] <= '9' && v[1] == '\0') {
		st->left[slot] = (unsigned)(v[0] - '0');
	} else {
		st->left[slot] = 0;
		problem(p, "%s='%s' is not a number 0..%u (a boot script reads it as 0)", var,
			eq_quote(q, sizeof(q), v), EQ_BL_MAX_ATTEMPTS);
	}
}

static void parse_trial(const char *v, struct eq_bl_state *st, struct problems *p)
{
	char q[48];
	st->trial = -1;
	if (!v || !*v)
		return;
	st->trial = eq_bl_slot_index(v);
	if (st->trial < 0)
		problem(p, "%s='%s' is not a slot name (a boot script sees no trial)",
			eq_bl_var_name(p->bl, EQ_BL_VAR_TRIAL), eq_quote(q, sizeof(q), v));
}

/* Fills @st from @v, always; EQ_ERR_PARSE for the first problem. */
static eq_err parse_state(const struct eq_bl *bl, const struct eq_bl_vars *v, struct eq_bl_state *st,
			  struct eq_error *err)
{
	struct problems p = {.bl = bl, .where = bl->path};
	eq_bl_state_init(st);
	parse_order(v->val[EQ_BL_VAR_ORDER], st, &p);
	parse_left(v->val[EQ_BL_VAR_A_LEFT], 0, bl->good_attempts, st, &p);
	parse_left(v->val[EQ_BL_VAR_B_LEFT], 1, bl->good_attempts, st, &p);
	parse_trial(v->val[EQ_BL_VAR_TRIAL], st, &p);
	if (!p.n)
		return EQ_OK;
	if (p.n > 1)
		return eq_error_set(err, EQ_ERR_PARSE, "%s: %s (and %u more problems)", p.where, p.first, p.n - 1);
	return eq_error_set(err, EQ_ERR_PARSE, "%s: %s", p.where, p.first);
}

eq_err eq_bl_get_state(struct eq_bl *bl, struct eq_bl_state *ret_state, struct eq_error *err)
{
	struct eq_bl_vars v = {{NULL}};
	struct eq_error verr;
	eq_error_clear(&verr);
	eq_err r = bl->ops->get_vars(bl, &v, &verr);
	if (r != EQ_OK && r != EQ_ERR_PARSE && r != EQ_ERR_LIMIT) {
		eq_bl_vars_done(&v);
		if (err)
			*err = verr;
		return r;
	}
	if (r == EQ_ERR_LIMIT)
		eq_bl_vars_done(&v); /* nothing of an oversized store counts */
	struct eq_bl_state st;
	struct eq_error perr;
	eq_err pr = parse_state(bl, &v, &st, &perr);
	eq_bl_vars_done(&v);
	/* The store's own problem (a line, the size) comes first: it usually
	 * explains the variable problems. */
	const struct eq_error *first = r ? &verr : &perr;
	if (!r)
		r = pr;
	if (r) {
		if (err)
			*err = *first;
		if (r == EQ_ERR_LIMIT && err) {
			size_t l = strlen(err->msg);
			snprintf(err->msg + l, sizeof(err->msg) - l, " (read as if every variable were missing)");
		}
		eq_log(EQ_LOG_DEBUG, "%s", first->msg);
	}
	*ret_state = st;
	return r;
}

/* ---- formatting and writing -------------------------------------------- */

static eq_err check_state(const struct eq_bl_state *st, struct eq_error *err)
{
	if (st->n_order > EQ_BL_SLOTS)
		return eq_error_set(err, EQ_ERR_INVAL, "boot order of %zu slots", st->n_order);
	for (size_t i = 0; i < st->n_order; i++) {
		if (st->order[i] >= EQ_BL_SLOTS)
			return eq_error_set(err, EQ_ERR_INVAL, "boot order names slot index %u", st->order[i]);
		if (i > 0 && st->order[i] == st->order[0])
			return eq_error_set(err, EQ_ERR_INVAL, "boot order names slot %s twice",
					    eq_bl_slot_name(st->order[i]));
	}
	for (unsigned s = 0; s < EQ_BL_SLOTS; s++)
		if (st->left[s] > EQ_BL_MAX_ATTEMPTS)
			return eq_error_set(err, EQ_ERR_INVAL, "slot %s: %u attempts, more than %u", eq_bl_slot_name(s),
					    st->left[s], EQ_BL_MAX_ATTEMPTS);
	if (st->trial < -1 || st->trial >= EQ_BL_SLOTS)
		return eq_error_set(err, EQ_ERR_INVAL, "trial slot index %d", st->trial);
	return EQ_OK;
}

eq_err eq_bl_set_state(struct eq_bl *bl, const struct eq_bl_state *state, struct eq_error *err)
{
	eq_err r = check_state(state, err);
	if (r)
		return r;
	/* At most "A B", one digit, one slot name: fixed buffers suffice. */
	char order[8] = "", a[4], b[4], trial[4] = "";
	for (size_t i = 0; i < state->n_order; i++)
		snprintf(order + strlen(order), sizeof(order) - strlen(order), "%s%s", i ? " " : "",
			 eq_bl_slot_name(state->order[i]));
	snprintf(a, sizeof(a), "%u", state->left[0]);
	snprintf(b, sizeof(b), "%u", state->left[1]);
	if (state->trial >= 0)
		snprintf(trial, sizeof(trial), "%s", eq_bl_slot_name((unsigned)state->trial));
	struct eq_bl_vars v = {{order, a, b, trial}};
	r = bl->ops->set_vars(bl, &v, err);
	if (!r)
		eq_log(EQ_LOG_DEBUG, "%s: %s='%s' %s=%s %s=%s %s='%s'", bl->path, bl->var[EQ_BL_VAR_ORDER], order,
		       bl->var[EQ_BL_VAR_A_LEFT], a, bl->var[EQ_BL_VAR_B_LEFT], b, bl->var[EQ_BL_VAR_TRIAL], trial);
	return r;
}

/* ---- transitions ----------------------------------------------------------- */

static bool in_order(const struct eq_bl_state *st, unsigned slot)
{
	for (size_t i = 0; i < st->n_order; i++)
		if (st->order[i] == slot)
			return true;
	return false;
}

static bool same_state(const struct eq_bl_state *x, const struct eq_bl_state *y)
{
	if (x->n_order != y->n_order || x->trial != y->trial)
		return false;
	for (size_t i = 0; i < x->n_order; i++)
		if (x->order[i] != y->order[i])
			return false;
	return x->left[0] == y->left[0] && x->left[1] == y->left[1];
}

/*
 * Reads the state to change. A garbled state is taken as a boot script reads
 * it (the write repairs it); @may_create turns a missing environment into the
 * empty state. *ret_clean tells whether the stored text already says exactly
 * this state, so an unchanged state need not be written.
 */
static eq_err load_for_change(struct eq_bl *bl, bool may_create, struct eq_bl_state *ret, bool *ret_clean,
			      struct eq_error *err)
{
	struct eq_error e;
	eq_err r = eq_bl_get_state(bl, ret, &e);
	*ret_clean = r == EQ_OK;
	if (r == EQ_OK || r == EQ_ERR_PARSE)
		return EQ_OK;
	if (r == EQ_ERR_NOTFOUND && may_create) {
		eq_bl_state_init(ret);
		return EQ_OK;
	}
	if (err)
		*err = e;
	if (r == EQ_ERR_NOTFOUND)
		eq_error_prefix(err, r, "no boot environment yet (a slot must be committed first)");
	else if (r == EQ_ERR_LIMIT)
		eq_error_prefix(err, r, "refusing to overwrite what cannot be a boot environment");
	return r;
}

static eq_err store(struct eq_bl *bl, const struct eq_bl_state *old, bool clean, const struct eq_bl_state *st,
		    struct eq_error *err)
{
	if (clean && same_state(old, st))
		return EQ_OK;
	return eq_bl_set_state(bl, st, err);
}

static eq_err check_slot(unsigned slot, struct eq_error *err)
{
	if (slot >= EQ_BL_SLOTS)
		return eq_error_set(err, EQ_ERR_INVAL, "no slot with index %u", slot);
	return EQ_OK;
}

eq_err eq_bl_try_once(struct eq_bl *bl, unsigned slot, struct eq_error *err)
{
	struct eq_bl_state old, st;
	bool clean;
	eq_err r = check_slot(slot, err);
	if (r || (r = load_for_change(bl, false, &old, &clean, err)))
		return r;
	unsigned other = 1 - slot;
	if (old.trial == (int)other)
		return eq_error_set(err, EQ_ERR_STATE,
				    "slot %s is still on trial: commit or reject it before trying slot %s",
				    eq_bl_slot_name(other), eq_bl_slot_name(slot));
	if (!in_order(&old, other) || old.left[other] == 0)
		return eq_error_set(err, EQ_ERR_STATE,
				    "slot %s is no fallback (%s): a failed try of slot %s would leave nothing to boot",
				    eq_bl_slot_name(other),
				    in_order(&old, other) ? "no attempts left" : "not in the boot order",
				    eq_bl_slot_name(slot));
	st = old;
	st.order[0] = slot;
	st.order[1] = other;
	st.n_order = 2;
	st.left[slot] = bl->try_attempts;
	st.trial = (int)slot;
	return store(bl, &old, clean, &st, err);
}

/* @slot first with good_attempts, the other behind it if it is a fallback. */
static void commit(const struct eq_bl *bl, unsigned slot, struct eq_bl_state *st)
{
	unsigned other = 1 - slot;
	bool keep_other = in_order(st, other) && st->left[other] > 0;
	st->order[0] = slot;
	st->n_order = 1;
	if (keep_other)
		st->order[st->n_order++] = other;
	st->left[slot] = bl->good_attempts;
	st->trial = -1;
}

eq_err eq_bl_mark_good(struct eq_bl *bl, unsigned slot, struct eq_error *err)
{
	struct eq_bl_state old, st;
	bool clean;
	eq_err r = check_slot(slot, err);
	if (r || (r = load_for_change(bl, true, &old, &clean, err)))
		return r;
	st = old;
	commit(bl, slot, &st);
	return store(bl, &old, clean, &st, err);
}

eq_err eq_bl_mark_bad(struct eq_bl *bl, unsigned slot, struct eq_error *err)
{
	struct eq_bl_state old, st;
	bool clean;
	eq_err r = check_slot(slot, err);
	if (r || (r = load_for_change(bl, false, &old, &clean, err)))
		return r;
	st = old;
	st.n_order = 0;
	for (size_t i = 0; i < old.n_order; i++)
		if (old.order[i] != slot)
			st.order[st.n_order++] = old.order[i];
	st.left[slot] = 0;
	if (st.trial == (int)slot)
		st.trial = -1;
	return store(bl, &old, clean, &st, err);
}

eq_err eq_bl_rearm(struct eq_bl *bl, unsigned slot, struct eq_error *err)
{
	struct eq_bl_state old, st;
	bool clean;
	eq_err r = check_slot(slot, err);
	if (r || (r = load_for_change(bl, false, &old, &clean, err)))
		return r;
	if (old.trial == (int)slot)
		return eq_error_set(err, EQ_ERR_STATE, "slot %s is on trial, not committed: not re-armed",
				    eq_bl_slot_name(slot));
	if (!in_order(&old, slot))
		return eq_error_set(err, EQ_ERR_STATE, "slot %s is not in the boot order: not re-armed",
				    eq_bl_slot_name(slot));
	st = old;
	st.left[slot] = bl->good_attempts;
	return store(bl, &old, clean, &st, err);
}

eq_err eq_bl_init_default(struct eq_bl *bl, unsigned slot_good, struct eq_error *err)
{
	eq_err r = check_slot(slot_good, err);
	if (r)
		return r;
	struct eq_bl_state st;
	eq_bl_state_init(&st);
	commit(bl, slot_good, &st);
	return eq_bl_set_state(bl, &st, err);
}
