/* stubs.c — every declared MPI call the layer does not implement: MPI_ERR_UNSUPPORTED_OPERATION naming it. */
#include "mpi_impl.h"

/* The communicator argument's error handler runs when there is one, MPI_COMM_WORLD's otherwise. */
#define UNSUPPORTED(comm, name) return fold__mpi_unsupported(comm, name, NULL)

int MPI_Comm_create_errhandler(MPI_Comm_errhandler_function *function, MPI_Errhandler *errhandler) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Comm_create_errhandler"); }
int MPI_Comm_call_errhandler(MPI_Comm comm, int errorcode) { UNSUPPORTED(comm, "MPI_Comm_call_errhandler"); }
int MPI_Add_error_class(int *errorclass) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Add_error_class"); }
int MPI_Add_error_code(int errorclass, int *errorcode) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Add_error_code"); }
int MPI_Add_error_string(int errorcode, const char *string) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Add_error_string"); }
int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm) { UNSUPPORTED(comm, "MPI_Comm_dup_with_info"); }
int MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request) { UNSUPPORTED(comm, "MPI_Comm_idup"); }
int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm) { UNSUPPORTED(comm, "MPI_Comm_create"); }
int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm) { UNSUPPORTED(comm, "MPI_Comm_create_group"); }
int MPI_Comm_group(MPI_Comm comm, MPI_Group *group) { UNSUPPORTED(comm, "MPI_Comm_group"); }
int MPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val) { UNSUPPORTED(comm, "MPI_Comm_set_attr"); }
int MPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval) { UNSUPPORTED(comm, "MPI_Comm_delete_attr"); }
int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *copy_fn, MPI_Comm_delete_attr_function *delete_fn, int *comm_keyval, void *extra_state) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Comm_create_keyval"); }
int MPI_Comm_free_keyval(int *comm_keyval) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Comm_free_keyval"); }
int MPI_Comm_set_name(MPI_Comm comm, const char *comm_name) { UNSUPPORTED(comm, "MPI_Comm_set_name"); }
int MPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen) { UNSUPPORTED(comm, "MPI_Comm_get_name"); }
int MPI_Comm_remote_size(MPI_Comm comm, int *size) { UNSUPPORTED(comm, "MPI_Comm_remote_size"); }
int MPI_Comm_set_info(MPI_Comm comm, MPI_Info info) { UNSUPPORTED(comm, "MPI_Comm_set_info"); }
int MPI_Comm_get_info(MPI_Comm comm, MPI_Info *info_used) { UNSUPPORTED(comm, "MPI_Comm_get_info"); }
int MPI_Group_size(MPI_Group group, int *size) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Group_size"); }
int MPI_Group_rank(MPI_Group group, int *rank) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Group_rank"); }
int MPI_Group_free(MPI_Group *group) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Group_free"); }
int MPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Group_incl"); }
int MPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Group_excl"); }
int MPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2, int ranks2[]) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Group_translate_ranks"); }
int MPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Group_compare"); }
int MPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Group_union"); }
int MPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Group_intersection"); }
int MPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Group_difference"); }
int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Group_range_incl"); }
int MPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Group_range_excl"); }
int MPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype, MPI_Datatype *newtype) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Type_vector"); }
int MPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype, MPI_Datatype *newtype) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Type_create_hvector"); }
int MPI_Type_indexed(int count, const int array_of_blocklengths[], const int array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Type_indexed"); }
int MPI_Type_create_hindexed(int count, const int array_of_blocklengths[], const MPI_Aint array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Type_create_hindexed"); }
int MPI_Type_create_indexed_block(int count, int blocklength, const int array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Type_create_indexed_block"); }
int MPI_Type_create_struct(int count, const int array_of_blocklengths[], const MPI_Aint array_of_displacements[], const MPI_Datatype array_of_types[], MPI_Datatype *newtype) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Type_create_struct"); }
int MPI_Type_create_subarray(int ndims, const int array_of_sizes[], const int array_of_subsizes[], const int array_of_starts[], int order, MPI_Datatype oldtype, MPI_Datatype *newtype) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Type_create_subarray"); }
int MPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent, MPI_Datatype *newtype) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Type_create_resized"); }
int MPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, int outsize, int *position, MPI_Comm comm) { UNSUPPORTED(comm, "MPI_Pack"); }
int MPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount, MPI_Datatype datatype, MPI_Comm comm) { UNSUPPORTED(comm, "MPI_Unpack"); }
int MPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size) { UNSUPPORTED(comm, "MPI_Pack_size"); }
int MPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Op_create"); }
int MPI_Op_free(MPI_Op *op) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Op_free"); }
int MPI_Op_commutative(MPI_Op op, int *commute) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Op_commutative"); }
int MPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype, MPI_Op op) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Reduce_local"); }
int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag, int source, int recvtag, MPI_Comm comm, MPI_Status *status) { UNSUPPORTED(comm, "MPI_Sendrecv_replace"); }
int MPI_Cancel(MPI_Request *request) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Cancel"); }
int MPI_Test_cancelled(const MPI_Status *status, int *flag) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Test_cancelled"); }
int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Request_get_status"); }
int MPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request) { UNSUPPORTED(comm, "MPI_Send_init"); }
int MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Request *request) { UNSUPPORTED(comm, "MPI_Recv_init"); }
int MPI_Start(MPI_Request *request) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Start"); }
int MPI_Startall(int count, MPI_Request array_of_requests[]) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Startall"); }
int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status) { UNSUPPORTED(comm, "MPI_Mprobe"); }
int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message, MPI_Status *status) { UNSUPPORTED(comm, "MPI_Improbe"); }
int MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Mrecv"); }
int MPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Request *request) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Imrecv"); }
int MPI_Buffer_attach(void *buffer, int size) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Buffer_attach"); }
int MPI_Buffer_detach(void *buffer_addr, int *size) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Buffer_detach"); }
int MPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) { UNSUPPORTED(comm, "MPI_Alltoallw"); }
int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) { UNSUPPORTED(comm, "MPI_Scan"); }
int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) { UNSUPPORTED(comm, "MPI_Exscan"); }
int MPI_Ialltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request *request) { UNSUPPORTED(comm, "MPI_Ialltoallw"); }
int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request) { UNSUPPORTED(comm, "MPI_Ireduce_scatter"); }
int MPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request) { UNSUPPORTED(comm, "MPI_Iscan"); }
int MPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request) { UNSUPPORTED(comm, "MPI_Iexscan"); }
int MPI_Info_create(MPI_Info *info) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Info_create"); }
int MPI_Info_set(MPI_Info info, const char *key, const char *value) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Info_set"); }
int MPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Info_get"); }
int MPI_Info_free(MPI_Info *info) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Info_free"); }
int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Alloc_mem"); }
int MPI_Free_mem(void *base) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Free_mem"); }
int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win) { UNSUPPORTED(comm, "MPI_Win_create"); }
int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win) { UNSUPPORTED(comm, "MPI_Win_allocate"); }
int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win) { UNSUPPORTED(comm, "MPI_Win_allocate_shared"); }
int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win) { UNSUPPORTED(comm, "MPI_Win_create_dynamic"); }
int MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Win_attach"); }
int MPI_Win_detach(MPI_Win win, const void *base) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Win_detach"); }
int MPI_Win_free(MPI_Win *win) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Win_free"); }
int MPI_Win_fence(int assert, MPI_Win win) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Win_fence"); }
int MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Win_lock"); }
int MPI_Win_unlock(int rank, MPI_Win win) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Win_unlock"); }
int MPI_Win_lock_all(int assert, MPI_Win win) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Win_lock_all"); }
int MPI_Win_unlock_all(MPI_Win win) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Win_unlock_all"); }
int MPI_Win_flush(int rank, MPI_Win win) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Win_flush"); }
int MPI_Win_flush_local(int rank, MPI_Win win) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Win_flush_local"); }
int MPI_Win_flush_all(MPI_Win win) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Win_flush_all"); }
int MPI_Win_flush_local_all(MPI_Win win) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Win_flush_local_all"); }
int MPI_Win_sync(MPI_Win win) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Win_sync"); }
int MPI_Win_post(MPI_Group group, int assert, MPI_Win win) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Win_post"); }
int MPI_Win_start(MPI_Group group, int assert, MPI_Win win) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Win_start"); }
int MPI_Win_complete(MPI_Win win) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Win_complete"); }
int MPI_Win_wait(MPI_Win win) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Win_wait"); }
int MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Put"); }
int MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Get"); }
int MPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Accumulate"); }
int MPI_Get_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, void *result_addr, int result_count, MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Get_accumulate"); }
int MPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Fetch_and_op"); }
int MPI_Compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr, MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, MPI_Win win) { UNSUPPORTED(MPI_COMM_WORLD, "MPI_Compare_and_swap"); }
