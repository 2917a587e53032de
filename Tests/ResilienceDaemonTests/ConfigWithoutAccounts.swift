import ResilienceDaemon
import ResiliencePolicyFile

/// A config for daemon tests about hooks, metrics or systemd, which run the daemon without SIP
/// accounts. A config file must name at least one, so `settings` (top-level YAML lines) are read
/// with a placeholder account on loopback, which is then dropped: no SIP traffic at all.
func configWithoutAccounts(_ settings: String, file: String, directory: String) throws(PolicyFileError)
    -> DaemonConfig
{
    var config = try DaemonConfigFile.parse(
        settings + "accounts: [{ name: a, registrar: 127.0.0.1, user: a, domain: example.test, password: x }]\n",
        file: file, directory: directory)
    config.accounts = []
    return config
}
