/* The sampler interface: dispatch to the operations of each kind of
 * sampler, with the defaults dcpi/sampler.h gives for the optional ones. */
#include <errno.h>

#include "dcpi/error.h"
#include "dcpi/sampler.h"

int dcpi_sampler_open(const struct dcpi_sampler_ops *be, const struct dcpi_eventlist *l,
		      const struct dcpi_sampler_opts *o, struct dcpi_sampler **out)
{
	int err = be->open(l, o, out);

	if (!err)
		(*out)->ops = be;
	return err;
}

void dcpi_sampler_close(struct dcpi_sampler *s)
{
	if (s)
		s->ops->close(s);
}

int dcpi_sampler_enable(struct dcpi_sampler *s)
{
	return s->ops->enable ? s->ops->enable(s) : 0;
}

int dcpi_sampler_disable(struct dcpi_sampler *s)
{
	return s->ops->disable ? s->ops->disable(s) : 0;
}

size_t dcpi_sampler_pollfds(const struct dcpi_sampler *s, struct pollfd *fds, size_t max)
{
	return s->ops->pollfds ? s->ops->pollfds(s, fds, max) : 0;
}

unsigned dcpi_sampler_ncpus(const struct dcpi_sampler *s)
{
	return s->ops->ncpus ? s->ops->ncpus(s) : 0;
}

int dcpi_sampler_drain(struct dcpi_sampler *s, dcpi_record_cb cb, void *arg)
{
	return s->ops->drain(s, cb, arg);
}

int dcpi_sampler_drain_split(struct dcpi_sampler *s, dcpi_record_cb side, int (*mid)(void *arg),
			     dcpi_record_cb samples, void *arg)
{
	if (!s->ops->drain_split)
		return -EOPNOTSUPP;
	return s->ops->drain_split(s, side, mid, samples, arg);
}

int dcpi_sampler_event_of(const struct dcpi_sampler *s, uint64_t id)
{
	return s->ops->event_of(s, id);
}

int dcpi_sampler_times(const struct dcpi_sampler *s, unsigned ev, uint64_t *enabled,
		       uint64_t *running)
{
	*enabled = *running = 0;
	if (!s->ops->times)
		return dcpi_error(EOPNOTSUPP, "the %s sampler keeps no event times",
				  s->ops->name);
	return s->ops->times(s, ev, enabled, running);
}

void dcpi_sampler_rerandomize(struct dcpi_sampler *s)
{
	if (s->ops->rerandomize)
		s->ops->rerandomize(s);
}

size_t dcpi_sampler_losses(struct dcpi_sampler *s, struct dcpi_sampler_loss *out, size_t max)
{
	return s->ops->losses ? s->ops->losses(s, out, max) : 0;
}
