package io.butterfly.worker.engine;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

/**
 * A TorchScript archive that holds only source code, laid out as {@code torch.jit.save} writes one, for libtorch's
 * {@code torch::jit::load} to compile: the code files under {@code code/}, and in {@code data.pkl} an instance of the
 * module class with no state but its {@code training} flag. No tensors, no constants: weights and caches are passed
 * to the module's methods.
 *
 * <p>{@code data.pkl} is the one pickle libtorch's loader needs to find the class (protocol 2, the opcodes
 * {@code torch.jit.save} itself writes for a module without attributes): {@code PROTO 2, GLOBAL '__torch__ <class>',
 * EMPTY_TUPLE, NEWOBJ, EMPTY_DICT, MARK, 'training', False, SETITEMS, BUILD, STOP}. The loader compiles the class
 * from {@code code/__torch__.py}, and a name {@code __torch__.a.b.f} from {@code code/__torch__/a/b.py}.
 */
final class TorchScriptArchive {

    /** The directory every entry is under; libtorch takes the first entry's. */
    private static final String ROOT = "butterfly/";

    private TorchScriptArchive() {
    }

    /**
     * @param moduleClass the module class, defined in {@code code/__torch__.py}
     * @param codeFiles   source by path under {@code code/}, e.g. {@code __torch__.py}, {@code __torch__/butterfly/attention.py}
     */
    static byte[] of(String moduleClass, Map<String, String> codeFiles) {
        if (!codeFiles.containsKey("__torch__.py")) {
            throw new IllegalArgumentException("the module class " + moduleClass + " needs code/__torch__.py");
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ZipOutputStream zip = new ZipOutputStream(bytes)) {
            // Format 3: code as source plus data.pkl; libtorch 2.x reads 1 to 10.
            put(zip, "version", "3\n".getBytes(StandardCharsets.US_ASCII));
            put(zip, "data.pkl", modulePickle(moduleClass));
            put(zip, "constants.pkl", new byte[]{(byte) 0x80, 2, ')', '.'}); // an empty tuple
            for (Map.Entry<String, String> file : codeFiles.entrySet()) {
                put(zip, "code/" + file.getKey(), file.getValue().getBytes(StandardCharsets.UTF_8));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e); // in memory: does not happen
        }
        return bytes.toByteArray();
    }

    private static byte[] modulePickle(String moduleClass) {
        if (!moduleClass.matches("[A-Za-z_][A-Za-z0-9_]*")) {
            throw new IllegalArgumentException("not a class name: " + moduleClass);
        }
        ByteArrayOutputStream p = new ByteArrayOutputStream();
        p.write(0x80); // PROTO
        p.write(2);
        p.writeBytes(("c__torch__\n" + moduleClass + "\n").getBytes(StandardCharsets.US_ASCII)); // GLOBAL
        p.write(')'); // EMPTY_TUPLE: no constructor arguments
        p.write(0x81); // NEWOBJ
        p.write('}'); // EMPTY_DICT: the state
        p.write('('); // MARK
        byte[] key = "training".getBytes(StandardCharsets.US_ASCII);
        p.write('X'); // BINUNICODE, 4-byte little-endian length
        p.write(key.length);
        p.write(0);
        p.write(0);
        p.write(0);
        p.writeBytes(key);
        p.write(0x89); // NEWFALSE: inference
        p.write('u'); // SETITEMS
        p.write('b'); // BUILD
        p.write('.'); // STOP
        return p.toByteArray();
    }

    /** A stored (uncompressed) entry: libtorch reads records in place. */
    private static void put(ZipOutputStream zip, String name, byte[] data) throws IOException {
        ZipEntry entry = new ZipEntry(ROOT + name);
        entry.setMethod(ZipEntry.STORED);
        entry.setSize(data.length);
        entry.setCompressedSize(data.length);
        CRC32 crc = new CRC32();
        crc.update(data);
        entry.setCrc(crc.getValue());
        zip.putNextEntry(entry);
        zip.write(data);
        zip.closeEntry();
    }
}
