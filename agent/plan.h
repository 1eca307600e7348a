/*
 * The update plan (plan.c), private to eq_agent and reached by its tests;
 * the plan's types are in <eq/agent.h> (struct eq_check holds one).
 */
#ifndef EQ_AGENT_PLAN_H
#define EQ_AGENT_PLAN_H

#include <eq/agent.h>

/*
 * Decides per package from the signed manifests alone (O(packages)): keep
 * when the unihash (or the payload hash) is unchanged, delta when the new
 * package offers one from the running payload, full otherwise, remove for
 * packages that are gone. @running may be NULL (provisioning: all full).
 * Free with eq_plan_done(); the plan points into both manifests.
 */
eq_err eq_plan_make(const struct eq_manifest *running, const struct eq_manifest *next, struct eq_plan *ret,
		    struct eq_error *err) EQ_MUST_CHECK;
void eq_plan_done(struct eq_plan *p);

#endif
