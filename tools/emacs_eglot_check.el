;;; emacs_eglot_check.el --- Eglot (headless) against `assistant lsp' -*- lexical-binding: t -*-
;; Run by tools/emacs_eglot_check.sh: the docs/EDITORS.md entry without AUCTeX (latex-mode),
;; then what a user does with citations (keys only): complete in \cite{ and [@, accept (the
;; item's command adds the .bib entry: Eglot 1.9 cannot create files, the server writes it),
;; hover, definition, references, rename. Writes one JSON object of step -> result.
(require 'eglot)
(require 'json)

(defvar check-folder (getenv "CITE_ASSIST_FOLDER"))
(defvar check-result (getenv "CITE_ASSIST_RESULT"))
(defvar check-cmd (split-string (getenv "CITE_ASSIST_LSP_ARGS") "\t"))
(defvar check-steps nil)

(defun check-step (name ok detail)
  (push (cons name (list (cons 'ok (if ok t :json-false))
                         (cons 'detail (format "%s" detail))))
        check-steps))

(defun check-finish ()
  (with-temp-file check-result
    (insert (json-encode (list (cons 'emacs emacs-version)
                               (cons 'eglot (if (boundp 'eglot-version) eglot-version "?"))
                               (cons 'steps check-steps)))))
  (kill-emacs 0))

;; the docs' set-up (without AUCTeX the mode is latex-mode; Markdown opens in text-mode here)
(add-to-list 'eglot-server-programs
             `((latex-mode LaTeX-mode tex-mode markdown-mode text-mode) . ,check-cmd))
(setq eglot-sync-connect 60 eglot-connect-timeout 120 eglot-autoshutdown t
      eglot-confirm-server-initiated-edits nil)

(defun check-open (name mode)
  (find-file (expand-file-name name check-folder))
  (funcall mode)
  (unless (eglot-current-server)
    (apply #'eglot (eglot--guess-contact)))
  (let ((deadline (+ (float-time) 120)))  ; a slow start goes on asynchronously: wait for it
    (while (and (not (eglot-current-server)) (< (float-time) deadline))
      (accept-process-output nil 0.2)))
  (current-buffer))

(defun check-request (method params)
  (jsonrpc-request (eglot-current-server) method params :timeout 60))

(defun check-pos (needle shift)
  (save-excursion
    (goto-char (point-min))
    (search-forward needle)
    (goto-char (+ (match-beginning 0) shift))
    (eglot--pos-to-lsp-position)))

(condition-case err
    (let* ((tex (check-open "paper.tex" #'latex-mode))
           (uri (eglot--path-to-uri (buffer-file-name tex)))
           (doc (list :uri uri)))
      ;; wait for the library keys
      (let ((deadline (+ (float-time) 120)) items)
        (while (and (null items) (< (float-time) deadline))
          (let ((res (check-request :textDocument/completion
                                    (list :textDocument doc
                                          :position (check-pos "\\cite{}" 6)))))
            (setq items (append (plist-get res :items) nil))
            (unless items (sleep-for 0.5))))
        (setq items (sort items (lambda (a b) (string< (plist-get a :sortText)
                                                       (plist-get b :sortText)))))
        (let* ((first (car items))
               (key (plist-get first :label))
               (command (plist-get first :command)))
          (check-step 'complete_cite (and first t) key)
          ;; accept: insert the key, run the item's command as Eglot does on exit
          (goto-char (point-min))
          (search-forward "\\cite{")
          (insert key)
          (when command
            (check-request :workspace/executeCommand
                           (list :command (plist-get command :command)
                                 :arguments (plist-get command :arguments))))
          (save-some-buffers t)
          (let ((bib (expand-file-name "refs.bib" check-folder)))
            (check-step 'accept_adds_bib_entry
                        (and (file-exists-p bib)
                             (with-temp-buffer
                               (insert-file-contents bib)
                               (search-forward (concat "{" key ",") nil t)))
                        key))
          (let ((where (list :textDocument doc :position (check-pos key 1))))
            (let ((hover (check-request :textDocument/hover where)))
              (check-step 'hover (plist-get hover :contents)
                          (truncate-string-to-width
                           (format "%s" (plist-get (plist-get hover :contents) :value)) 60)))
            (let* ((def (check-request :textDocument/definition where))
                   (loc (if (vectorp def) (aref def 0) def)))
              (check-step 'definition (and loc (string-match-p "refs\\.bib\\'" (plist-get loc :uri)))
                          (plist-get loc :uri)))
            (let ((refs (check-request :textDocument/references
                                       (append where (list :context (list :includeDeclaration t))))))
              (check-step 'references (>= (length refs) 2) (length refs)))
            (let ((edit (check-request :textDocument/rename (append where (list :newName "renamed2024")))))
              ;; refs.bib is not visited: Eglot asks before editing it; the user says yes
              (cl-letf (((symbol-function 'y-or-n-p) (lambda (&rest _) t)))
                (when edit (eglot--apply-workspace-edit edit)))
              (check-step 'rename (save-excursion (goto-char (point-min))
                                                  (search-forward "\\cite{renamed2024}" nil t))
                          "renamed2024")))))
      ;; Pandoc [@ in a Markdown file (one Eglot entry for both: languageId may say latex)
      (let* ((md (check-open "notes.md" #'text-mode))
             (res (check-request :textDocument/completion
                                 (list :textDocument (list :uri (eglot--path-to-uri (buffer-file-name md)))
                                       :position (check-pos "[@" 2)))))
        (check-step 'complete_pandoc (> (length (plist-get res :items)) 0)
                    (length (plist-get res :items)))))
  (error (check-step 'error nil (error-message-string err))))
(check-finish)
