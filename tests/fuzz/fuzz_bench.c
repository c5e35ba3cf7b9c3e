/* libFuzzer harness: what a node prints for `provision bench` (bench.sh's lines), judged, recorded,
 * compared. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "bench.h"
#include "validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bench_node b = {0};
	struct validation v = {0};
	struct strbuf rec = STRBUF_INIT, d = STRBUF_INIT;
	struct error err = {0};

	b.limit_cpus = 0.5;
	/* 2 threads, 1000 ms, 3 runs: what the seed was made with */
	(void)bench_parse(&b, (const char *)data, size, 2, 1000, 3, &err);
	bench_judge(&v, 0, &b, 1);
	bench_record(&rec, &b);
	bench_diff(&d, rec.buf, rec.buf, "  ");
	/* a record from the node's own bytes: diff reads records it did not write */
	strbuf_reset(&d);
	{
		char *text = malloc(size + 1);
		if (text) {
			for (size_t i = 0; i < size; i++)
				text[i] = data[i] ? (char)data[i] : '\n';
			text[size] = '\0';
			bench_diff(&d, rec.buf, text, "  ");
			bench_diff(&d, text, rec.buf, "  ");
			free(text);
		}
	}
	validation_release(&v);
	bench_node_release(&b);
	strbuf_release(&rec);
	strbuf_release(&d);
	return 0;
}
