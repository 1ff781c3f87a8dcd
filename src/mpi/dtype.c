/* dtype.c — MPI datatypes and ops: sizes, names, contiguous types, and their fold (dtype, op) for reductions. */
#include <complex.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "mpi_impl.h"

#define NOT_REDUCED (-1) /* moved as bytes, never reduced */

typedef struct {
  const char *name;
  size_t size;
  int fold; /* fold_dtype, or NOT_REDUCED */
} predef;

/* Indexed by the handle values of mpi.h. */
static const predef types[] = {
    [MPI_CHAR] = {"MPI_CHAR", 1, FOLD_INT8},
    [MPI_SIGNED_CHAR] = {"MPI_SIGNED_CHAR", 1, FOLD_INT8},
    [MPI_UNSIGNED_CHAR] = {"MPI_UNSIGNED_CHAR", 1, FOLD_UINT8},
    [MPI_BYTE] = {"MPI_BYTE", 1, FOLD_UINT8},
    [MPI_WCHAR] = {"MPI_WCHAR", sizeof(wchar_t), NOT_REDUCED},
    [MPI_SHORT] = {"MPI_SHORT", sizeof(short), NOT_REDUCED},
    [MPI_UNSIGNED_SHORT] = {"MPI_UNSIGNED_SHORT", sizeof(unsigned short), NOT_REDUCED},
    [MPI_INT] = {"MPI_INT", sizeof(int), FOLD_INT32},
    [MPI_UNSIGNED] = {"MPI_UNSIGNED", sizeof(unsigned), FOLD_UINT32},
    [MPI_LONG] = {"MPI_LONG", sizeof(long), sizeof(long) == 8 ? FOLD_INT64 : FOLD_INT32},
    [MPI_UNSIGNED_LONG] = {"MPI_UNSIGNED_LONG", sizeof(unsigned long), sizeof(long) == 8 ? FOLD_UINT64 : FOLD_UINT32},
    [MPI_LONG_LONG_INT] = {"MPI_LONG_LONG_INT", sizeof(long long), FOLD_INT64},
    [MPI_UNSIGNED_LONG_LONG] = {"MPI_UNSIGNED_LONG_LONG", sizeof(unsigned long long), FOLD_UINT64},
    [MPI_FLOAT] = {"MPI_FLOAT", sizeof(float), FOLD_FLOAT32},
    [MPI_DOUBLE] = {"MPI_DOUBLE", sizeof(double), FOLD_FLOAT64},
    [MPI_LONG_DOUBLE] = {"MPI_LONG_DOUBLE", sizeof(long double), NOT_REDUCED},
    [MPI_C_BOOL] = {"MPI_C_BOOL", sizeof(_Bool), NOT_REDUCED},
    [MPI_INT8_T] = {"MPI_INT8_T", 1, FOLD_INT8},
    [MPI_INT16_T] = {"MPI_INT16_T", 2, NOT_REDUCED},
    [MPI_INT32_T] = {"MPI_INT32_T", 4, FOLD_INT32},
    [MPI_INT64_T] = {"MPI_INT64_T", 8, FOLD_INT64},
    [MPI_UINT8_T] = {"MPI_UINT8_T", 1, FOLD_UINT8},
    [MPI_UINT16_T] = {"MPI_UINT16_T", 2, NOT_REDUCED},
    [MPI_UINT32_T] = {"MPI_UINT32_T", 4, FOLD_UINT32},
    [MPI_UINT64_T] = {"MPI_UINT64_T", 8, FOLD_UINT64},
    [MPI_AINT] = {"MPI_AINT", sizeof(MPI_Aint), sizeof(MPI_Aint) == 8 ? FOLD_INT64 : FOLD_INT32},
    [MPI_OFFSET] = {"MPI_OFFSET", sizeof(MPI_Offset), FOLD_INT64},
    [MPI_COUNT] = {"MPI_COUNT", sizeof(MPI_Count), FOLD_INT64},
    [MPI_C_COMPLEX] = {"MPI_C_COMPLEX", sizeof(float _Complex), NOT_REDUCED},
    [MPI_C_DOUBLE_COMPLEX] = {"MPI_C_DOUBLE_COMPLEX", sizeof(double _Complex), NOT_REDUCED},
    [MPI_C_LONG_DOUBLE_COMPLEX] = {"MPI_C_LONG_DOUBLE_COMPLEX", sizeof(long double _Complex), NOT_REDUCED},
    [MPI_PACKED] = {"MPI_PACKED", 1, NOT_REDUCED},
    [MPI_FLOAT_INT] = {"MPI_FLOAT_INT", sizeof(struct { float v; int i; }), FOLD_FLOAT32_INT32},
    [MPI_DOUBLE_INT] = {"MPI_DOUBLE_INT", sizeof(struct { double v; int i; }), FOLD_FLOAT64_INT32},
    /* {long, int}: fold's 64-bit pair has a 64-bit index, so the padding would count: moved only */
    [MPI_LONG_INT] = {"MPI_LONG_INT", sizeof(struct { long v; int i; }), NOT_REDUCED},
    [MPI_2INT] = {"MPI_2INT", sizeof(struct { int v; int i; }), FOLD_INT32_INT32},
    [MPI_SHORT_INT] = {"MPI_SHORT_INT", sizeof(struct { short v; int i; }), NOT_REDUCED},
    [MPI_LONG_DOUBLE_INT] = {"MPI_LONG_DOUBLE_INT", sizeof(struct { long double v; int i; }), NOT_REDUCED},
};
#define NPREDEF ((int)(sizeof types / sizeof types[0]))

/* Derived types: handle FIRST_DERIVED + i is derived[i], count copies of a predefined base. */
#define FIRST_DERIVED 1024
typedef struct {
  int used;
  MPI_Datatype base; /* predefined */
  size_t count;
} derived_t;
static derived_t *derived;
static int nderived;

static const derived_t *get_derived(MPI_Datatype t) {
  int i = t - FIRST_DERIVED;
  return i >= 0 && i < nderived && derived[i].used ? &derived[i] : NULL;
}

size_t fold__mpi_type_size(MPI_Datatype t) {
  if (t > 0 && t < NPREDEF)
    return types[t].size;
  const derived_t *d = get_derived(t);
  return d ? d->count * types[d->base].size : 0;
}

const char *fold__mpi_type_name(MPI_Datatype t) {
  if (t > 0 && t < NPREDEF && types[t].name)
    return types[t].name;
  return get_derived(t) ? "a contiguous datatype" : "an invalid datatype";
}

int fold__mpi_bytes(MPI_Comm comm, const char *call, MPI_Datatype t, int count, size_t *bytes) {
  size_t sz = fold__mpi_type_size(t);
  if (sz == 0)
    return fold__mpi_raise(comm, MPI_ERR_TYPE, call, "datatype %d is not a valid datatype", t);
  if (count < 0)
    return fold__mpi_raise(comm, MPI_ERR_COUNT, call, "count %d is negative", count);
  *bytes = sz * (size_t)count;
  return MPI_SUCCESS;
}

static const char *op_name(MPI_Op op) {
  static const char *const names[] = {NULL, "MPI_MAX", "MPI_MIN", "MPI_SUM", "MPI_PROD", "MPI_LAND", "MPI_BAND",
                                      "MPI_LOR", "MPI_BOR", "MPI_LXOR", "MPI_BXOR", "MPI_MINLOC", "MPI_MAXLOC",
                                      "MPI_REPLACE", "MPI_NO_OP"};
  return op > 0 && op <= MPI_NO_OP ? names[op] : NULL;
}

int fold__mpi_reduction(MPI_Comm comm, const char *call, MPI_Datatype t, int count, MPI_Op op, fold_dtype *fd,
                        size_t *fcount, fold_op *fo) {
  size_t n = 1;
  MPI_Datatype base = t;
  const derived_t *d = get_derived(t);
  if (d) {
    base = d->base;
    n = d->count;
  }
  if (!(base > 0 && base < NPREDEF && types[base].size))
    return fold__mpi_raise(comm, MPI_ERR_TYPE, call, "datatype %d is not a valid datatype", t);
  if (count < 0)
    return fold__mpi_raise(comm, MPI_ERR_COUNT, call, "count %d is negative", count);
  const char *on = op_name(op);
  if (on == NULL)
    return op >= FIRST_DERIVED ? fold__mpi_unsupported(comm, call, "a user op (MPI_Op_create)")
                               : fold__mpi_raise(comm, MPI_ERR_OP, call, "op %d is not a valid op", op);
  int f = types[base].fold;
  if (f == NOT_REDUCED)
    return fold__mpi_raise(comm, MPI_ERR_UNSUPPORTED_OPERATION, call,
                           "a reduction of %s is not supported by fold's MPI layer (docs/mpi.md)", types[base].name);
  int pair = f >= FOLD_FLOAT32_INT32 && f <= FOLD_INT64_INT64;
  int integer = f <= FOLD_UINT64;
  switch (op) {
  case MPI_SUM: *fo = FOLD_SUM; break;
  case MPI_PROD: *fo = FOLD_PROD; break;
  case MPI_MIN: *fo = FOLD_MIN; break;
  case MPI_MAX: *fo = FOLD_MAX; break;
  case MPI_BAND: *fo = FOLD_BAND; break;
  case MPI_BOR: *fo = FOLD_BOR; break;
  case MPI_BXOR: *fo = FOLD_BXOR; break;
  case MPI_MINLOC: *fo = FOLD_MINLOC; break;
  case MPI_MAXLOC: *fo = FOLD_MAXLOC; break;
  default:
    return fold__mpi_raise(comm, MPI_ERR_UNSUPPORTED_OPERATION, call,
                           "%s is not supported by fold's MPI layer (docs/mpi.md)", on);
  }
  if (pair != (op == MPI_MINLOC || op == MPI_MAXLOC))
    return fold__mpi_raise(comm, MPI_ERR_OP, call, "%s %s", on,
                           pair ? "does not apply to a pair type" : "needs a pair type (MPI_2INT, ...)");
  if ((op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR) && !integer)
    return fold__mpi_raise(comm, MPI_ERR_OP, call, "%s does not apply to %s", on, types[base].name);
  *fd = (fold_dtype)f;
  *fcount = n * (size_t)count;
  return MPI_SUCCESS;
}

int MPI_Type_size(MPI_Datatype datatype, int *size) {
  size_t s = fold__mpi_type_size(datatype);
  if (s == 0 || size == NULL)
    return fold__mpi_raise(MPI_COMM_WORLD, s ? MPI_ERR_ARG : MPI_ERR_TYPE, "MPI_Type_size",
                           "datatype %d (or a NULL size)", datatype);
  *size = s > (size_t)INT32_MAX ? MPI_UNDEFINED : (int)s;
  return MPI_SUCCESS;
}

int MPI_Type_size_x(MPI_Datatype datatype, MPI_Count *size) {
  size_t s = fold__mpi_type_size(datatype);
  if (s == 0 || size == NULL)
    return fold__mpi_raise(MPI_COMM_WORLD, s ? MPI_ERR_ARG : MPI_ERR_TYPE, "MPI_Type_size_x",
                           "datatype %d (or a NULL size)", datatype);
  *size = (MPI_Count)s;
  return MPI_SUCCESS;
}

int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent) {
  size_t s = fold__mpi_type_size(datatype);
  if (s == 0 || lb == NULL || extent == NULL)
    return fold__mpi_raise(MPI_COMM_WORLD, s ? MPI_ERR_ARG : MPI_ERR_TYPE, "MPI_Type_get_extent",
                           "datatype %d (or a NULL argument)", datatype);
  *lb = 0;
  *extent = (MPI_Aint)s; /* every supported type is contiguous */
  return MPI_SUCCESS;
}

int MPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb, MPI_Aint *true_extent) {
  return MPI_Type_get_extent(datatype, true_lb, true_extent);
}

int MPI_Type_commit(MPI_Datatype *datatype) {
  if (datatype == NULL || fold__mpi_type_size(*datatype) == 0)
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Type_commit", "not a valid datatype");
  return MPI_SUCCESS;
}

int MPI_Type_free(MPI_Datatype *datatype) {
  if (datatype == NULL || get_derived(*datatype) == NULL)
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Type_free",
                           "datatype %d is predefined or not valid: only derived types are freed",
                           datatype ? *datatype : 0);
  derived[*datatype - FIRST_DERIVED].used = 0;
  *datatype = MPI_DATATYPE_NULL;
  return MPI_SUCCESS;
}

static int new_derived(const char *call, MPI_Datatype base, size_t count, MPI_Datatype *newtype) {
  int i = 0;
  while (i < nderived && derived[i].used)
    i++;
  if (i == nderived) {
    int n = nderived ? 2 * nderived : 16;
    derived_t *t = realloc(derived, sizeof(*t) * (size_t)n);
    if (t == NULL)
      return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, call, "no memory for a datatype");
    memset(t + nderived, 0, sizeof(*t) * (size_t)(n - nderived));
    derived = t;
    nderived = n;
  }
  derived[i] = (derived_t){1, base, count};
  *newtype = FIRST_DERIVED + i;
  return MPI_SUCCESS;
}

int MPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype) {
  const char *call = "MPI_Type_contiguous";
  if (newtype == NULL)
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, call, "newtype is NULL");
  if (count < 0)
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_COUNT, call, "count %d is negative", count);
  const derived_t *d = get_derived(oldtype);
  if (d)
    return new_derived(call, d->base, d->count * (size_t)count, newtype);
  if (!(oldtype > 0 && oldtype < NPREDEF && types[oldtype].size))
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_TYPE, call, "datatype %d is not a valid datatype", oldtype);
  if (count == 0)
    return fold__mpi_unsupported(MPI_COMM_WORLD, call, "a datatype of size 0");
  return new_derived(call, oldtype, (size_t)count, newtype);
}

int MPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype) { return MPI_Type_contiguous(1, oldtype, newtype); }

int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count) {
  size_t s = fold__mpi_type_size(datatype);
  if (status == NULL || count == NULL || s == 0)
    return fold__mpi_raise(MPI_COMM_WORLD, s ? MPI_ERR_ARG : MPI_ERR_TYPE, "MPI_Get_count",
                           "datatype %d (or a NULL argument)", datatype);
  long long b = status->fold_bytes_;
  *count = b % (long long)s || b / (long long)s > INT32_MAX ? MPI_UNDEFINED : (int)(b / (long long)s);
  return MPI_SUCCESS;
}

int MPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count) {
  const derived_t *d = get_derived(datatype);
  return MPI_Get_count(status, d ? d->base : datatype, count);
}

int MPI_Get_address(const void *location, MPI_Aint *address) {
  if (address == NULL)
    return fold__mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Get_address", "address is NULL");
  *address = (MPI_Aint)location;
  return MPI_SUCCESS;
}
