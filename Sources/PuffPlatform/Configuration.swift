import PuffCore

/// Builds `PuffOptions`: defaults, then `puff.conf`, then the arguments.
public enum Configuration {
    /// The options and the warnings to log (unknown keys). A missing configuration file is
    /// not an error; an unsafe or unreadable one, or a bad value anywhere, is.
    ///
    /// Without `readingFile` only the defaults and the arguments apply: a module running
    /// unprivileged cannot read the root-only file, and its helper applies the file itself.
    /// The file's directory stays open in `session` (usually the store's, `/etc/puff`).
    public static func load(arguments: [String], readingFile: Bool = true, session: StoreSession = StoreSession())
        throws(StoreError) -> (options: PuffOptions, warnings: [String]) {
        var options = PuffOptions()
        // Where this build installs the helper (PREFIX-derived), not a fixed path.
        options.helperPath = BuildInfo.helperPath
        options.directory.libraryPath = BuildInfo.ldapLibraryPath
        // Only a process that unseals loads the TPM client: the module has no opener.
        if StoreKey.opener != nil { options.tpm.libraryPath = BuildInfo.tpmLibraryPath }
        var warnings: [String] = []
        do {
            // `conf=` decides which file is read, so it is applied first.
            for argument in arguments where argument.hasBytePrefix("conf=") {
                _ = try OptionParser.apply(argument, to: &options, from: .argument)
            }
        } catch {
            throw .configuration(error.description)
        }
        if readingFile, let text = try readFile(options.configFile, session) {
            for token in OptionParser.tokens(ofConfigFile: text) {
                do {
                    if let warning = try OptionParser.apply(token, to: &options, from: .configFile) {
                        warnings.append("\(options.configFile): \(warning)")
                    }
                } catch {
                    throw .configuration("\(options.configFile): \(error.description)")
                }
            }
        }
        for argument in arguments {
            do {
                if let warning = try OptionParser.apply(argument, to: &options, from: .argument) {
                    warnings.append("argument: \(warning)")
                }
            } catch {
                throw .configuration("argument \(error.description)")
            }
        }
        do {
            _ = try options.gestureParameters()
            try options.directory.validate()
        } catch {
            throw .configuration(error.description)
        }
        return (options, warnings)
    }

    private static func readFile(_ path: String, _ session: StoreSession) throws(StoreError) -> String? {
        guard let (directory, name) = try session.parent(of: path),
              let bytes = try directory.trusted.readFile(name, .rootWritable(maximumSize: 64 * 1024)) else { return nil }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw .configuration("\(path): not valid UTF-8")
        }
        return text
    }
}
