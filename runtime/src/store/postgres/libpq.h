// libpq, loaded the first time a PostgreSQL store is opened (dlopen), not linked: a runner, and
// every command of it that reads a SQLite store, does not load libpq and the twenty libraries it
// brings (Kerberos, LDAP, GnuTLS, SASL…), which took 3 ms of each process's start (#33). The
// store's files call libpq through Pq() only; libpq-fe.h gives the types and constants.
#pragma once

#include <libpq-fe.h>

namespace jr2rt::pg {

// libpq's functions this store calls, each named as libpq names it without `PQ`.
struct Libpq {
  decltype(&::PQbackendPID) backendPID = nullptr;
  decltype(&::PQclear) clear = nullptr;
  decltype(&::PQcmdTuples) cmdTuples = nullptr;
  decltype(&::PQconnectdbParams) connectdbParams = nullptr;
  decltype(&::PQconsumeInput) consumeInput = nullptr;
  decltype(&::PQenterPipelineMode) enterPipelineMode = nullptr;
  decltype(&::PQerrorMessage) errorMessage = nullptr;
  decltype(&::PQexec) exec = nullptr;
  decltype(&::PQexecPrepared) execPrepared = nullptr;
  decltype(&::PQexitPipelineMode) exitPipelineMode = nullptr;
  decltype(&::PQfinish) finish = nullptr;
  decltype(&::PQflush) flush = nullptr;
  decltype(&::PQfreemem) freemem = nullptr;
  decltype(&::PQgetResult) getResult = nullptr;
  decltype(&::PQgetisnull) getisnull = nullptr;
  decltype(&::PQgetlength) getlength = nullptr;
  decltype(&::PQgetvalue) getvalue = nullptr;
  decltype(&::PQisBusy) isBusy = nullptr;
  decltype(&::PQnotifies) notifies = nullptr;
  decltype(&::PQntuples) ntuples = nullptr;
  decltype(&::PQpipelineSync) pipelineSync = nullptr;
  decltype(&::PQprepare) prepare = nullptr;
  decltype(&::PQreset) reset = nullptr;
  decltype(&::PQresultErrorField) resultErrorField = nullptr;
  decltype(&::PQresultErrorMessage) resultErrorMessage = nullptr;
  decltype(&::PQresultStatus) resultStatus = nullptr;
  decltype(&::PQsendFlushRequest) sendFlushRequest = nullptr;
  decltype(&::PQsendQueryParams) sendQueryParams = nullptr;
  decltype(&::PQsendQueryPrepared) sendQueryPrepared = nullptr;
  decltype(&::PQsetnonblocking) setnonblocking = nullptr;
  decltype(&::PQsocket) socket = nullptr;
  decltype(&::PQstatus) status = nullptr;
  decltype(&::PQtransactionStatus) transactionStatus = nullptr;
};

// libpq, loaded once (safe from any thread). Throws StoreError, saying what to install, when
// libpq.so.5 cannot be loaded or lacks a function (a libpq older than 14: no pipeline mode).
const Libpq& Pq();
// The library `soname` loaded as libpq, each function found: what Pq() does with libpq.so.5.
Libpq LoadLibpq(const char* soname);

}  // namespace jr2rt::pg
