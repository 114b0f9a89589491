// A PostgreSQL store's location (location.cpp): what no message may print of it.
#pragma once

#include <string>
#include <vector>

namespace jr2rt::pg {

// The passwords `location` holds (as written and percent-decoded): taken out of any text libpq
// or the server gives before a message prints it.
std::vector<std::string> LocationSecrets(const std::string& location);

}  // namespace jr2rt::pg
