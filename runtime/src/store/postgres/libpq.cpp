#include "store/postgres/libpq.h"

#include <dlfcn.h>

#include <string>

#include "jr2/store.h"

namespace jr2rt::pg {
namespace {

// The library's soname: libpq's ABI has kept it since PostgreSQL 8.2.
constexpr const char* kLibpq = "libpq.so.5";

std::string Missing(const char* soname, const std::string& why) {
  return std::string("the PostgreSQL run store needs libpq (") + soname + "): " + why +
         "; install it (Debian: apt-get install libpq5), version 14 or later";
}

template <typename Fn>
void Find(void* lib, const char* soname, const char* name, Fn& fn) {
  void* found = dlsym(lib, name);
  if (found == nullptr) throw StoreError(Missing(soname, std::string("it has no `") + name + "`"));
  fn = reinterpret_cast<Fn>(found);  // NOLINT: dlsym's answer is the function's address
}

}  // namespace

Libpq LoadLibpq(const char* soname) {
  // RTLD_LOCAL: its symbols are this store's, not the process's.
  void* lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    throw StoreError(Missing(soname, why != nullptr ? why : "it cannot be loaded"));
  }
  Libpq pq;
  Find(lib, soname, "PQbackendPID", pq.backendPID);
  Find(lib, soname, "PQclear", pq.clear);
  Find(lib, soname, "PQcmdTuples", pq.cmdTuples);
  Find(lib, soname, "PQconnectdbParams", pq.connectdbParams);
  Find(lib, soname, "PQconsumeInput", pq.consumeInput);
  Find(lib, soname, "PQenterPipelineMode", pq.enterPipelineMode);
  Find(lib, soname, "PQerrorMessage", pq.errorMessage);
  Find(lib, soname, "PQexec", pq.exec);
  Find(lib, soname, "PQexecPrepared", pq.execPrepared);
  Find(lib, soname, "PQexitPipelineMode", pq.exitPipelineMode);
  Find(lib, soname, "PQfinish", pq.finish);
  Find(lib, soname, "PQflush", pq.flush);
  Find(lib, soname, "PQfreemem", pq.freemem);
  Find(lib, soname, "PQgetResult", pq.getResult);
  Find(lib, soname, "PQgetisnull", pq.getisnull);
  Find(lib, soname, "PQgetlength", pq.getlength);
  Find(lib, soname, "PQgetvalue", pq.getvalue);
  Find(lib, soname, "PQisBusy", pq.isBusy);
  Find(lib, soname, "PQnotifies", pq.notifies);
  Find(lib, soname, "PQntuples", pq.ntuples);
  Find(lib, soname, "PQpipelineSync", pq.pipelineSync);
  Find(lib, soname, "PQprepare", pq.prepare);
  Find(lib, soname, "PQreset", pq.reset);
  Find(lib, soname, "PQresultErrorField", pq.resultErrorField);
  Find(lib, soname, "PQresultErrorMessage", pq.resultErrorMessage);
  Find(lib, soname, "PQresultStatus", pq.resultStatus);
  Find(lib, soname, "PQsendFlushRequest", pq.sendFlushRequest);
  Find(lib, soname, "PQsendQueryParams", pq.sendQueryParams);
  Find(lib, soname, "PQsendQueryPrepared", pq.sendQueryPrepared);
  Find(lib, soname, "PQsetnonblocking", pq.setnonblocking);
  Find(lib, soname, "PQsocket", pq.socket);
  Find(lib, soname, "PQstatus", pq.status);
  Find(lib, soname, "PQtransactionStatus", pq.transactionStatus);
  return pq;  // never unloaded: its connections may outlive any one store
}

const Libpq& Pq() {
  static const Libpq kPq =
      LoadLibpq(kLibpq);  // a failed load throws, and is tried again by the next open
  return kPq;
}

}  // namespace jr2rt::pg
