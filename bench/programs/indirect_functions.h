/* The benchmarks' indirect functions: F<N>(d) defines N functions `long fn_<number>(long x)`
 * returning x ^ <number>, the numbers the decimal digit d followed by base-4 digits; A<N>(d)
 * lists their addresses in the same order, each followed by a comma. */
#ifndef INDIRECT_FUNCTIONS_H
#define INDIRECT_FUNCTIONS_H

#define F1(n) long fn_##n(long x) { return x ^ n; }
#define F4(n) F1(n##0) F1(n##1) F1(n##2) F1(n##3)
#define F16(n) F4(n##0) F4(n##1) F4(n##2) F4(n##3)
#define F64(n) F16(n##0) F16(n##1) F16(n##2) F16(n##3)
#define F256(n) F64(n##0) F64(n##1) F64(n##2) F64(n##3)
#define F1024(n) F256(n##0) F256(n##1) F256(n##2) F256(n##3)
#define F4096(n) F1024(n##0) F1024(n##1) F1024(n##2) F1024(n##3)
#define F16384(n) F4096(n##0) F4096(n##1) F4096(n##2) F4096(n##3)
#define A1(n) fn_##n,
#define A4(n) A1(n##0) A1(n##1) A1(n##2) A1(n##3)
#define A16(n) A4(n##0) A4(n##1) A4(n##2) A4(n##3)
#define A64(n) A16(n##0) A16(n##1) A16(n##2) A16(n##3)
#define A256(n) A64(n##0) A64(n##1) A64(n##2) A64(n##3)
#define A1024(n) A256(n##0) A256(n##1) A256(n##2) A256(n##3)
#define A4096(n) A1024(n##0) A1024(n##1) A1024(n##2) A1024(n##3)
#define A16384(n) A4096(n##0) A4096(n##1) A4096(n##2) A4096(n##3)

#endif
